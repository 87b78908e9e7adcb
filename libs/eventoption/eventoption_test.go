package eventoption_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/eventoption"
	"github.com/eventreg/eventreg/libs/fixture"
)

func opt(name, typ, value string) fixture.Option {
	return fixture.Option{Name: name, Type: typ, Value: json.RawMessage(value)}
}

func TestParseTypedValues(t *testing.T) {
	good := []struct {
		in   fixture.Option
		want string
	}{
		{opt("Shirt", "select", `"M"`), `"M"`},
		{opt("Notes", "text", `"x"`), `"x"`},
		{opt("Guests", "number", `2`), `2`},
		{opt("Guests", "number", `2.5`), `2.5`},
		{opt("Days", "multi", `[ "Fri", "Sat" ]`), `["Fri","Sat"]`},
		{opt("Days", "multi", `[]`), `[]`},
	}
	for _, g := range good {
		got, err := eventoption.Parse(g.in, eventoption.OnlyKnown)
		if err != nil || string(got.Value) != g.want || got.Name != g.in.Name || got.Type != g.in.Type {
			t.Errorf("%+v: %+v %v", g.in, got, err)
		}
	}
	bad := []struct {
		in    fixture.Option
		field string
	}{
		{opt("Shirt", "select", `3`), "value"},
		{opt("Guests", "number", `"2"`), "value"},
		{opt("Days", "multi", `"Fri"`), "value"},
		{opt("Days", "multi", `["Fri", 1]`), "value"},
		{opt("X", "text", `null`), "value"},
		{opt("X", "text", ``), "value"},
		{opt("X", "text", `{"a":1}`), "value"},
		{opt("X", "colour", `"red"`), "type"},
		{opt("X", "", `"red"`), "type"},
		{opt(" ", "text", `"red"`), "name"},
	}
	for _, b := range bad {
		if _, err := eventoption.Parse(b.in, eventoption.OnlyKnown); err == nil || !strings.HasPrefix(err.Error(), b.field+":") {
			t.Errorf("%+v: err %v, want one about %s", b.in, err, b.field)
		}
	}
}

func TestAnyTypeKeepsValueRules(t *testing.T) {
	if _, err := eventoption.Parse(opt("Colour", "colour", `"red"`), eventoption.AnyType); err != nil {
		t.Fatalf("unknown type refused: %v", err)
	}
	if _, err := eventoption.Parse(opt("Colour", "colour", `true`), eventoption.AnyType); err == nil {
		t.Fatal("a boolean value was accepted")
	}
	if _, err := eventoption.Parse(opt("Hours", "number", `"12"`), eventoption.AnyType); err == nil {
		t.Fatal("a known type with the wrong value was accepted")
	}
}

func TestParseAllNamesTheIndex(t *testing.T) {
	_, err := eventoption.ParseAll([]fixture.Option{opt("a", "text", `"x"`), opt("b", "number", `"x"`)}, eventoption.OnlyKnown)
	if err == nil || !strings.HasPrefix(err.Error(), "options[1].value:") {
		t.Fatalf("err %v", err)
	}
}
