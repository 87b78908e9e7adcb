// Package userid reads user ids the way clients send them: as path segments and as JSON lists mixing strings and numbers.
package userid

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Parse reads a positive decimal user id ("1001"); anything else is not an id.
func Parse(s string) (int64, bool) {
	if s == "" || len(s) > 19 || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// ParseList reads a JSON array whose items are user ids given as strings or
// as numbers (["1001", 1002]); null or absent is (nil, nil). At most max ids are
// accepted. The result is sorted and without duplicates, so that equal sets of
// ids give equal filters. Errors are sentences meant for the client.
func ParseList(raw json.RawMessage, max int) ([]int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("must be an array of user ids")
	}
	if len(items) > max {
		return nil, fmt.Errorf("must hold at most %d ids (got %d)", max, len(items))
	}
	ids := make([]int64, 0, len(items))
	seen := make(map[int64]struct{}, len(items))
	for i, item := range items {
		text := string(bytes.TrimSpace(item))
		if s, err := strconv.Unquote(text); err == nil && strings.HasPrefix(text, `"`) {
			text = strings.TrimSpace(s)
		}
		id, ok := Parse(text)
		if !ok {
			return nil, fmt.Errorf("item %d is not a user id (a positive whole number, as a string or a number)", i)
		}
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}
