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

func TestContactTypes(t *testing.T) {
	t.Run("a dealer's phone and address options need a string", func(t *testing.T) {
		for _, typ := range []string{eventoption.Phone, eventoption.Address} {
			if _, err := eventoption.Parse(fixture.Option{Name: "x", Type: typ, Value: json.RawMessage(`"+15555550100"`)}, eventoption.OnlyKnownWithContact); err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			if _, err := eventoption.Parse(fixture.Option{Name: "x", Type: typ, Value: json.RawMessage(`5`)}, eventoption.OnlyKnownWithContact); err == nil {
				t.Fatalf("%s took a number", typ)
			}
		}
	})
	t.Run("registrations still refuse phone and an unknown type is refused for dealers", func(t *testing.T) {
		if _, err := eventoption.Parse(fixture.Option{Name: "x", Type: eventoption.Phone, Value: json.RawMessage(`"1"`)}, eventoption.OnlyKnown); err == nil {
			t.Fatal("registrations took a phone option")
		}
		if _, err := eventoption.Parse(fixture.Option{Name: "x", Type: "colour", Value: json.RawMessage(`"red"`)}, eventoption.OnlyKnownWithContact); err == nil {
			t.Fatal("dealers took an unknown type")
		}
	})
	t.Run("a volunteer's phone option stays open", func(t *testing.T) {
		if _, err := eventoption.Parse(fixture.Option{Name: "x", Type: eventoption.Phone, Value: json.RawMessage(`5`)}, eventoption.AnyType); err != nil {
			t.Fatal(err)
		}
	})
}
