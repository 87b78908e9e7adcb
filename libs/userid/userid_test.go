package userid_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/userid"
)

func TestParse(t *testing.T) {
	for s, want := range map[string]int64{"1": 1, "1001": 1001, "9223372036854775807": 9223372036854775807} {
		if got, ok := userid.Parse(s); !ok || got != want {
			t.Errorf("Parse(%q) = %d, %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "0", "-1", "+1", "1.5", "abc", "1e3", " 1", "99999999999999999999", "0x10"} {
		if _, ok := userid.Parse(s); ok {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

func TestParseList(t *testing.T) {
	t.Run("strings and numbers mixed, sorted without duplicates", func(t *testing.T) {
		got, err := userid.ParseList(json.RawMessage(`["1003", 1001, "1001", 1002]`), 100)
		if err != nil || !reflect.DeepEqual(got, []int64{1001, 1002, 1003}) {
			t.Fatalf("%v %v", got, err)
		}
	})
	t.Run("null and absent are no filter", func(t *testing.T) {
		for _, raw := range []string{"", "null"} {
			if got, err := userid.ParseList(json.RawMessage(raw), 100); got != nil || err != nil {
				t.Fatalf("%q: %v %v", raw, got, err)
			}
		}
	})
	t.Run("empty array is an empty filter", func(t *testing.T) {
		got, err := userid.ParseList(json.RawMessage(`[]`), 100)
		if err != nil || got == nil || len(got) != 0 {
			t.Fatalf("%v %v", got, err)
		}
	})
	t.Run("more than max is refused", func(t *testing.T) {
		ids := make([]int, 101)
		for i := range ids {
			ids[i] = i + 1
		}
		raw, _ := json.Marshal(ids)
		if _, err := userid.ParseList(raw, 100); err == nil || !strings.Contains(err.Error(), "at most 100") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("bad items name their index", func(t *testing.T) {
		for _, raw := range []string{`["1", "x"]`, `[1, 2.5]`, `[1, -2]`, `[1, true]`, `[1, null]`, `[1, {"id": 2}]`} {
			if _, err := userid.ParseList(json.RawMessage(raw), 100); err == nil || !strings.Contains(err.Error(), "item 1") {
				t.Errorf("%s: err %v", raw, err)
			}
		}
	})
	t.Run("not an array is refused", func(t *testing.T) {
		for _, raw := range []string{`"1001"`, `1001`, `{"a":1}`} {
			if _, err := userid.ParseList(json.RawMessage(raw), 100); err == nil {
				t.Errorf("%s accepted", raw)
			}
		}
	})
}
