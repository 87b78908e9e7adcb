package testkit

import (
	"encoding/json"
	"fmt"

	"github.com/google/go-cmp/cmp"
)

// JSONDiff compares two JSON documents as values and returns their
// difference (-want +got), "" when they are the same: a failing test
// prints the fields that differ instead of two whole bodies. A document that
// is not JSON is a difference.
func JSONDiff(want, got []byte) string {
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		return fmt.Sprintf("want is not JSON (%v): %s", err, want)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Sprintf("got is not JSON (%v): %s", err, got)
	}
	return cmp.Diff(w, g)
}

// BytesDiff is "" when got is byte for byte want, else what differs: the
// JSON values (-want +got), or both documents when only their layout does.
func BytesDiff(want, got []byte) string {
	if string(want) == string(got) {
		return ""
	}
	if diff := JSONDiff(want, got); diff != "" {
		return diff
	}
	return fmt.Sprintf("the same values in other bytes:\nwant: %s\ngot:  %s", want, got)
}
