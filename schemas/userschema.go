package schemas

// Schema is a compiled JSON Schema document that a user wrote (an eval
// set's expectation on an answer), as opposed to the embedded wire
// documents ValidateJSON checks against.
type Schema struct {
	id   string
	node *schemaNode
}

// CompileSchema compiles raw, a JSON Schema document; id names it in
// errors. It may $ref the embedded documents by their absolute URLs.
func CompileSchema(id string, raw []byte) (*Schema, error) {
	n, err := compileSchema(id, raw)
	if err != nil {
		return nil, err
	}
	return &Schema{id: id, node: n}, nil
}

// Check returns every problem of doc against the schema (a document that
// is not JSON is one problem); none when the schema accepts it.
func (s *Schema) Check(doc []byte) []Problem { return check(s.node, doc) }
