// Package eventoption holds event-defined options (name, type, value) as volunteers and registrations store and render them, with the typing rules of their values.
package eventoption

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/eventreg/eventreg/libs/fixture"
)

// The option types of registrations, each with the JSON type of its value.
const (
	Select = "select" // a string
	Multi  = "multi"  // an array of strings
	Text   = "text"   // a string
	Number = "number" // a number
	// Phone and Address are types of dealers' own options.
	Phone   = "phone"   // a string
	Address = "address" // a string
)

// Known lists the types registrations allow.
var Known = []string{Select, Multi, Text, Number}

// KnownWithContact lists the types a dealer's own options allow: Known and
// Phone and Address.
var KnownWithContact = []string{Select, Multi, Text, Number, Phone, Address}

// Option is one option. Value is canonical JSON: a string, a number or an array
// of strings.
type Option struct {
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// Rule says which types are accepted.
type Rule int

const (
	// OnlyKnown accepts the types in Known (registrations).
	OnlyKnown Rule = iota
	// AnyType accepts any non-empty type name; a known type still fixes the
	// value's JSON type (volunteers, whose option types the contract leaves open).
	AnyType
	// OnlyKnownWithContact accepts the types in KnownWithContact (a dealer's
	// own options).
	OnlyKnownWithContact
)

// Parse checks a fixture option and returns it with its value canonical.
// Errors name the field that is wrong.
func Parse(o fixture.Option, rule Rule) (Option, error) {
	if strings.TrimSpace(o.Name) == "" {
		return Option{}, errors.New("name: must not be empty")
	}
	if strings.TrimSpace(o.Type) == "" {
		return Option{}, errors.New("type: must not be empty")
	}
	known := isKnown(o.Type)
	if rule == OnlyKnown && !known {
		return Option{}, fmt.Errorf("type: must be one of %s (got %q)", strings.Join(Known, ", "), o.Type)
	}
	if rule == OnlyKnownWithContact && !slices.Contains(KnownWithContact, o.Type) {
		return Option{}, fmt.Errorf("type: must be one of %s (got %q)", strings.Join(KnownWithContact, ", "), o.Type)
	}
	v, kind, err := canonical(o.Value)
	if err != nil {
		return Option{}, fmt.Errorf("value: %w", err)
	}
	// Phone and address fix their value's type only for dealers: a
	// volunteer's option of those names stays open.
	typed := known || rule == OnlyKnownWithContact
	if typed && kind != kindOf(o.Type) {
		return Option{}, fmt.Errorf("value: an option of type %s needs %s", o.Type, kindOf(o.Type))
	}
	return Option{Name: o.Name, Type: o.Type, Value: v}, nil
}

// ParseAll parses a list; the error names the index of the bad option.
func ParseAll(opts []fixture.Option, rule Rule) ([]Option, error) {
	out := make([]Option, 0, len(opts))
	for i, o := range opts {
		p, err := Parse(o, rule)
		if err != nil {
			return nil, fmt.Errorf("options[%d].%w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func isKnown(t string) bool {
	for _, k := range Known {
		if k == t {
			return true
		}
	}
	return false
}

const (
	kindString  = "a string"
	kindNumber  = "a number"
	kindStrings = "an array of strings"
)

func kindOf(t string) string {
	switch t {
	case Number:
		return kindNumber
	case Multi:
		return kindStrings
	default:
		return kindString
	}
}

// canonical re-encodes a value that is a string, a finite number or an array of strings.
func canonical(raw json.RawMessage) (json.RawMessage, string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", errors.New("must be present (a number, a string or an array of strings)")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "", errors.New("must be a number, a string or an array of strings")
	}
	switch x := v.(type) {
	case string:
		b, _ := json.Marshal(x)
		return b, kindString, nil
	case json.Number:
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, "", errors.New("must be a finite number")
		}
		return json.RawMessage(x.String()), kindNumber, nil
	case []any:
		ss := make([]string, 0, len(x))
		for _, item := range x {
			s, ok := item.(string)
			if !ok {
				return nil, "", errors.New("an array value must hold only strings")
			}
			ss = append(ss, s)
		}
		b, _ := json.Marshal(ss)
		return b, kindStrings, nil
	}
	return nil, "", errors.New("must be a number, a string or an array of strings")
}
