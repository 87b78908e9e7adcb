package jsonbody_test

import (
	"encoding/json"
	"regexp"
	"strconv"
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

// FuzzCheck compares Check with referenceCheck, the encoding/json token walk
// it replaced: both must accept and refuse the same bodies, for the same
// reason where the body is valid JSON, except that Check also refuses
// escaped lone surrogates.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":2}]}`, `{"a":1,"a":2}`, `[[[]]]`, `"x"`, `{} {`,
		`{"a":1,"\u0061":2}`, `"\ud800"`, `"\ud83d\ude00"`, strings.Repeat("[", 33) + strings.Repeat("]", 33)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want := jsonbody.Check(b), referenceCheck(b)
		switch {
		case got == nil && want == nil:
		case got != nil && want == nil:
			if !loneSurrogate.Match(b) || !strings.Contains(got.Error(), "not valid JSON") {
				t.Fatalf("Check refused %q (%v); the reference accepted it", b, got)
			}
		case got == nil && want != nil:
			t.Fatalf("Check accepted %q; the reference refused it (%v)", b, want)
		case reason(got) != reason(want) && json.Valid(b):
			t.Fatalf("%q: Check says %q, the reference %q", b, got, want)
		}
	})
}

// loneSurrogate matches a \u escape in the surrogate range.
var loneSurrogate = regexp.MustCompile(`(?i)\\u[d][89a-f]`)

// reason is an error's kind. A body that is not valid JSON may also be,
// say, too deep or hold a key twice (`""{"a":0,"a"`: a second value, itself
// truncated, with a repeated key); the two walks may meet either first, so
// the reasons are compared only for bodies encoding/json finds valid.
func reason(err error) string {
	for _, k := range []string{"twice", "deeper", "UTF-8"} {
		if strings.Contains(err.Error(), k) {
			return k
		}
	}
	return "invalid" // "not valid JSON" or "more than one JSON value"
}

func TestCheckReasons(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"filter":{"email":"a","email":"b"}}`, `The request body has the key "email" twice.`},
		{`{"a":1,"\u0061":2}`, `The request body has the key "a" twice.`},
		{`{"a/b":1,"a/b":2}`, `The request body has the key "a/b" twice.`},
		{`"\ud800"`, "The request body is not valid JSON."},
		{``, "The request body is not valid JSON."},
		{`{} {`, "The request body holds more than one JSON value."},
		{strings.Repeat("[", 33) + strings.Repeat("]", 33), "The request body nests deeper than 32 levels."},
	}
	for _, tc := range cases {
		if err := jsonbody.Check([]byte(tc.body)); err == nil || err.Error() != tc.want {
			t.Errorf("Check(%q) = %v, want %q", tc.body, err, tc.want)
		}
	}
	for _, ok := range []string{strings.Repeat("[", 32) + strings.Repeat("]", 32), `"\ud83d\ude00"`, ` {"a":{"a":1}} `} {
		if err := jsonbody.Check([]byte(ok)); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
}

// BenchmarkCheck is the internal summaries call's body: 100 user ids.
func BenchmarkCheck(b *testing.B) { benchmarkCheck(b, jsonbody.Check) }

// BenchmarkReferenceCheck is the same body through the token walk Check
// replaced, for the ratio.
func BenchmarkReferenceCheck(b *testing.B) { benchmarkCheck(b, referenceCheck) }

func benchmarkCheck(b *testing.B, check func([]byte) error) {
	var sb strings.Builder
	sb.WriteString(`{"ids":[`)
	for i := range 100 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(10_000_000 + i*7919))
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	b.ReportAllocs()
	for b.Loop() {
		if err := check(body); err != nil {
			b.Fatal(err)
		}
	}
}
