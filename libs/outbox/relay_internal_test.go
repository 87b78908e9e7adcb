package outbox

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/authapi"
)

func TestSplit(t *testing.T) {
	ev := func(size int) authapi.Event {
		return authapi.Event{ID: "x", Data: json.RawMessage(`"` + strings.Repeat("a", size) + `"`)}
	}
	events := []authapi.Event{ev(100), ev(100), ev(1000), ev(10), ev(10)}
	var sizes []int
	for _, p := range split(events, 600) {
		sizes = append(sizes, len(p))
	}
	if len(sizes) != 3 || sizes[0] != 2 || sizes[1] != 1 || sizes[2] != 2 {
		t.Fatalf("parts %v", sizes)
	}
	if parts := split(nil, 600); len(parts) != 0 {
		t.Fatalf("%d parts of nothing", len(parts))
	}
}
