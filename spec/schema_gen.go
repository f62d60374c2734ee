package spec

import (
	cqjsonschema "github.com/cloudquery/codegen/jsonschema"
)

// GenerateSchema returns the JSON schema of Spec, with descriptions taken
// from the Go comments of the source files in dir.
func GenerateSchema(dir string) ([]byte, error) {
	data, err := cqjsonschema.Generate(new(Spec), cqjsonschema.WithAddGoComments("github.com/cq-source-x/cq-source-x/spec", dir))
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
