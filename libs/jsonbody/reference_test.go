package jsonbody_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/eventreg/eventreg/libs/jsonbody"
)

// referenceCheck is Check as it was until 2026-11 (an encoding/json token
// walk), kept as the oracle of FuzzCheck.
func referenceCheck(body []byte) error {
	if !utf8.Valid(body) {
		return errors.New("The request body is not valid UTF-8.")
	}
	type frame struct {
		object, expectKey bool
		keys              map[string]struct{}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []*frame
	values := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return errors.New("The request body is not valid JSON.")
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				values++
			} else if parent := stack[len(stack)-1]; parent.object {
				parent.expectKey = true
			}
			continue
		}
		if top != nil && top.object && top.expectKey {
			key, _ := tok.(string)
			if _, dup := top.keys[key]; dup {
				return fmt.Errorf("The request body has the key %q twice.", key)
			}
			top.keys[key] = struct{}{}
			top.expectKey = false
			continue
		}
		if d, ok := tok.(json.Delim); ok {
			if len(stack) >= jsonbody.MaxDepth {
				return fmt.Errorf("The request body nests deeper than %d levels.", jsonbody.MaxDepth)
			}
			stack = append(stack, &frame{object: d == '{', expectKey: d == '{', keys: map[string]struct{}{}})
			continue
		}
		if top == nil {
			values++
		} else if top.object {
			top.expectKey = true
		}
	}
	if len(stack) != 0 || values != 1 {
		if values > 1 {
			return errors.New("The request body holds more than one JSON value.")
		}
		return errors.New("The request body is not valid JSON.")
	}
	return nil
}
