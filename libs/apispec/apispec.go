package apispec

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oasdiff/yaml"
)

//go:embed openapi.yaml
var document []byte

// jsonDocument converts the embedded YAML once. The document is checked by the
// package's tests, so a failure here is a build defect, not a runtime condition.
var jsonDocument = sync.OnceValue(func() []byte {
	b, err := yaml.YAMLToJSON(document)
	if err != nil {
		panic(fmt.Sprintf("apispec: converting openapi.yaml to JSON: %v", err))
	}
	return b
})

// Document returns the OpenAPI document as written (YAML). The caller owns the
// returned slice.
func Document() []byte { return bytes.Clone(document) }

// JSON returns the OpenAPI document converted to JSON. The conversion runs once;
// the caller owns the returned slice.
func JSON() []byte { return bytes.Clone(jsonDocument()) }

// Load parses and validates the document. Each call returns a fresh copy, so a
// caller may change it (e.g. drop the servers) without affecting others.
func Load(ctx context.Context) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	loader.Context = ctx
	doc, err := loader.LoadFromData(document)
	if err != nil {
		return nil, fmt.Errorf("loading the OpenAPI document: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("validating the OpenAPI document: %w", err)
	}
	return doc, nil
}
