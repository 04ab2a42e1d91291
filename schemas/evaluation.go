package schemas

import "fmt"

// TypeEvaluation is the data type of a score of an output against
// criteria (an Evaluation), as a pipeline's evaluator step records it.
const TypeEvaluation = "EVALUATION"

// Evaluation is a score from 0 (fails the criteria) to 1 (meets them
// fully) with the reasoning behind it.
type Evaluation struct {
	Score     float64 `json:"score"`
	Reasoning string  `json:"reasoning"`
	Criteria  string  `json:"criteria,omitempty"`
}

// evaluationType is the EVALUATION descriptor: kept in history and read by
// conditions from the evaluator's record, it fills no slot.
func evaluationType() DataType {
	return DataType{
		Name:        TypeEvaluation,
		Description: "A score from 0 to 1 of an output against criteria, with the reasoning.",
		Describe: func(v TypedValue) string {
			var e Evaluation
			if v.Decode(&e) != nil {
				return "an evaluation"
			}
			return fmt.Sprintf("score %.2f: %s", e.Score, e.Reasoning)
		},
	}
}
