package suite

import (
	"errors"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/cursor"
)

var testCursorKey = []byte("0123456789abcdef0123456789abcdef")

type testFilter struct {
	RoleID int64 `json:"roleId"`
}

func TestReissueKeepsQueryAndFilter(t *testing.T) {
	c, _ := cursor.NewCodec(testCursorKey)
	r, err := newCursorReissuer(testCursorKey)
	if err != nil {
		t.Fatal(err)
	}
	issued := c.Encode("users.search", testFilter{RoleID: 3}, 100)
	deep, err := r.Reissue(issued, 900_000)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Decode(deep, "users.search", testFilter{RoleID: 3})
	if err != nil || got != 900_000 {
		t.Fatalf("got %d, %v; want 900000", got, err)
	}
	if _, err := c.Decode(deep, "users.search", testFilter{RoleID: 4}); !errors.Is(err, cursor.ErrInvalid) {
		t.Fatalf("a reissued cursor must stay bound to its filter: %v", err)
	}
}

func TestReissueRefusesForeignCursors(t *testing.T) {
	c, _ := cursor.NewCodec(testCursorKey)
	other, _ := cursor.NewCodec([]byte(strings.Repeat("k", 32)))
	r, _ := newCursorReissuer(testCursorKey)
	cases := map[string]struct {
		cursor string
		after  int64
	}{
		"signed with another key": {other.Encode("users.search", nil, 1), 5},
		"malformed":               {"abc", 5},
		"negative key":            {c.Encode("users.search", nil, 1), -1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := r.Reissue(tc.cursor, tc.after); !errors.Is(err, errForeignCursor) {
				t.Fatalf("want errForeignCursor, got %v", err)
			}
		})
	}
}
