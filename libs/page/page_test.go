package page_test

import (
	"encoding/json"
	"testing"

	"github.com/eventreg/eventreg/libs/cursor"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/page/keyset"
)

func TestParseLimit(t *testing.T) {
	good := map[string]int{"": 100, "1": 1, "50": 50, "100": 100, "1000": 100, "99999999999999999999999": 100}
	for in, want := range good {
		if got, e := page.ParseLimit(in); e != nil || got != want {
			t.Errorf("ParseLimit(%q) = %d, %v; want %d", in, got, e, want)
		}
	}
	for _, in := range []string{"0", "-1", "ten", "1.5", "-99999999999999999999"} {
		if _, e := page.ParseLimit(in); e == nil || e.Status != 400 {
			t.Errorf("ParseLimit(%q) should be a 400", in)
		}
	}
}

func TestRequestLimit(t *testing.T) {
	cases := map[string]int{`{}`: 100, `{"limit":null}`: 100, `{"limit":1}`: 1, `{"limit":"25"}`: 25, `{"limit":1000}`: 100, `{"limit":1e9}`: 100}
	for body, want := range cases {
		var r page.Request
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		if got, e := r.LimitValue(); e != nil || got != want {
			t.Errorf("%s: got %d, %v; want %d", body, got, e, want)
		}
	}
	for _, body := range []string{`{"limit":0}`, `{"limit":-5}`, `{"limit":"x"}`, `{"limit":true}`, `{"limit":[1]}`, `{"limit":2.5}`, `{"limit":""}`} {
		var r page.Request
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		if _, e := r.LimitValue(); e == nil {
			t.Errorf("%s: want 400", body)
		}
	}
}

func TestWalkSeesEveryRowOnce(t *testing.T) {
	codec, _ := cursor.NewCodec([]byte("0123456789abcdef0123456789abcdef"))
	p := page.Paginator{Codec: codec, Query: "test"}
	all := make([]int64, 23)
	for i := range all {
		all[i] = int64(i*3 + 1)
	}
	fetch := func(ks keyset.Seek) []int64 {
		var out []int64
		for _, v := range all {
			if v > ks.After && len(out) < ks.Limit+1 {
				out = append(out, v)
			}
		}
		return out
	}
	var seen []int64
	var next *string
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("walk does not end")
		}
		ks, e := p.Start(next, 5, nil)
		if e != nil {
			t.Fatal(e)
		}
		resp := page.Finish(p, ks, fetch(ks), func(v int64) int64 { return v }, nil)
		seen = append(seen, resp.Data...)
		if !resp.HasMore {
			if resp.NextPage != nil {
				t.Fatal("nextPage set on the last page")
			}
			break
		}
		next = resp.NextPage
	}
	if len(seen) != len(all) {
		t.Fatalf("saw %d rows, want %d", len(seen), len(all))
	}
	for i := range all {
		if seen[i] != all[i] {
			t.Fatalf("row %d: %d != %d", i, seen[i], all[i])
		}
	}
}

func TestEmptyPageHasEmptyArray(t *testing.T) {
	codec, _ := cursor.NewCodec([]byte("0123456789abcdef0123456789abcdef"))
	p := page.Paginator{Codec: codec, Query: "test"}
	resp := page.Finish(p, keyset.Seek{Limit: 10}, []int64(nil), func(v int64) int64 { return v }, nil)
	b, _ := json.Marshal(resp)
	if string(b) != `{"data":[],"nextPage":null,"hasMore":false}` {
		t.Fatalf("got %s", b)
	}
}
