// Package apispec holds the OpenAPI 3.1 document of the whole public API
// (openapi.yaml in this directory, the only copy), serves it at GET /api/docs
// and validates requests and responses against it in tests.
//
// The document is embedded, so a binary serves exactly the contract it was
// built with. Services mount Handler; tests build a Validator once and check
// every response they receive:
//
//	v, err := apispec.NewValidator()
//	...
//	if err := v.ValidateResponse(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
//		t.Errorf("response breaks the API document: %v", err)
//	}
package apispec
