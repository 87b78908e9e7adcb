package cursor_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/cursor"
)

func TestReissueKeepsQueryAndFilter(t *testing.T) {
	c, _ := cursor.NewCodec(key)
	issued := c.Encode("users.search", filter{RoleID: 3}, 100)
	deep, err := c.Reissue(issued, 900_000)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Decode(deep, "users.search", filter{RoleID: 3})
	if err != nil || got != 900_000 {
		t.Fatalf("got %d, %v; want 900000", got, err)
	}
	if _, err := c.Decode(deep, "users.search", filter{RoleID: 4}); !errors.Is(err, cursor.ErrInvalid) {
		t.Fatalf("a reissued cursor must stay bound to its filter: %v", err)
	}
}

func TestReissueRefusesForeignCursors(t *testing.T) {
	c, _ := cursor.NewCodec(key)
	other, _ := cursor.NewCodec([]byte(strings.Repeat("k", 32)))
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
			if _, err := c.Reissue(tc.cursor, tc.after); !errors.Is(err, cursor.ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
		})
	}
}
