package jsonbody_test

import (
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/jsonbody"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		name, body string
		wantErr    string
	}{
		{"object", `{"a":1,"b":{"c":[1,2,{"d":null}]}}`, ""},
		{"nested keys may repeat across objects", `{"a":{"x":1},"b":{"x":2}}`, ""},
		{"duplicate key", `{"limit":1,"limit":100}`, "twice"},
		{"duplicate nested key", `{"filter":{"email":"a","email":"b"}}`, "twice"},
		{"invalid utf-8", "{\"a\":\"\xff\"}", "UTF-8"},
		{"too deep", strings.Repeat("[", 40) + strings.Repeat("]", 40), "deeper"},
		{"two values", `{} {}`, "more than one"},
		{"truncated", `{"a":`, "not valid JSON"},
		{"garbage", `nope`, "not valid JSON"},
		{"scalar", `3`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := jsonbody.Check([]byte(tc.body))
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func TestUnmarshalNamesTheMistypedField(t *testing.T) {
	var v struct {
		Limit int `json:"limit"`
	}
	e := jsonbody.Unmarshal([]byte(`{"limit":"ten"}`), &v, jsonbody.Options{})
	if e == nil || e.Status != 400 {
		t.Fatalf("want 400, got %+v", e)
	}
	fields := e.Extra["fields"].(map[string]string)
	if fields["limit"] != "must be a number" {
		t.Fatalf("fields = %v", fields)
	}
}

func TestUnmarshalEmptyBody(t *testing.T) {
	var v struct{}
	if e := jsonbody.Unmarshal(nil, &v, jsonbody.Options{EmptyAsObject: true}); e != nil {
		t.Fatalf("empty as object: %v", e)
	}
	if e := jsonbody.Unmarshal([]byte("  "), &v, jsonbody.Options{}); e == nil {
		t.Fatal("empty body should be refused")
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":2}]}`, `{"a":1,"a":2}`, `[[[]]]`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = jsonbody.Check(b) // must not panic
	})
}
