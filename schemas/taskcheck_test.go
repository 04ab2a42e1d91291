package schemas

import "testing"

// FuzzValidateTask checks that the quick check never accepts a task the
// schema rejects.
func FuzzValidateTask(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `[]`, `{"inputs":null}`, `{"params":null}`, `{"timeout_ms":-1}`, `{"timeout_ms":1.5}`, `{"timeout_ms":10}`,
		`{"inputs":{"text":{"data_type":"TEXT","value":"x","source":"s","produced_at":"2026-01-01T00:00:00.123456789Z"}},"params":{"op":"upper"},"instruction":"i","timeout_ms":30000}`,
		`{"inputs":{"text":{"data_type":"1TEXT","value":"x"}}}`, `{"inputs":{"text":{"data_type":"TEXT"}}}`, `{"inputs":{"t":null}}`,
		`{"inputs":{"t":{"data_type":"TEXT","value":null,"produced_at":"2026-01-01T00:00:60Z"}}}`,
		`{"inputs":{"t":{"data_type":"TEXT","value":1,"produced_at":"2026-01-01T00:00:00,5Z"}}}`,
		`{"inputs":{"t":{"data_type":"TEXT","value":1,"produced_at":"2026-01-01T00:00:00+23:59"}}}`,
		`{"inputs":{"t":{"data_type":"TE\u0058T","value":1,"content_type_hint":3}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if taskSurelyValid(data) {
			if err := ValidateJSON(SchemaTask, data); err != nil {
				t.Fatalf("the quick check accepted %s, the schema says %v", data, err)
			}
		}
	})
}
