// Package page holds the pagination rules every list endpoint shares, for the
// API packages: the limit (default 100, above 100 treated as 100, below 1
// refused), the response shape {data, nextPage, hasMore}, and keyset cursors
// through package cursor, errors in the API's shape (libs/apierror). Stores
// and business packages take the keyset.Seek it decodes (package keyset,
// free of HTTP).
package page

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/cursor"
	"github.com/eventreg/eventreg/libs/page/keyset"
)

// DefaultLimit is both the default and the largest page size.
const DefaultLimit = 100

// Response is a page of T. Data is never null.
type Response[T any] struct {
	Data     []T     `json:"data"`
	NextPage *string `json:"nextPage"`
	HasMore  bool    `json:"hasMore"`
}

// Request is the pagination part of a search body. Limit accepts a number or a
// numeric string; NextPage may be absent, null or "" for the first page.
type Request struct {
	NextPage *string          `json:"nextPage"`
	Limit    *json.RawMessage `json:"limit"`
}

// ParseLimit reads a limit given as text (query parameter); "" means default.
func ParseLimit(s string) (int, *apierror.Error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if ne := (*strconv.NumError)(nil); errors.As(err, &ne) && ne.Err == strconv.ErrRange && !strings.HasPrefix(s, "-") {
			return DefaultLimit, nil // absurdly large: treated as the largest page
		}
		return 0, badLimit()
	}
	if n < 1 {
		return 0, badLimit()
	}
	if n > DefaultLimit {
		return DefaultLimit, nil
	}
	return int(n), nil
}

// LimitValue reads the limit of a JSON body: absent or null means default.
func (r Request) LimitValue() (int, *apierror.Error) {
	if r.Limit == nil || string(*r.Limit) == "null" {
		return DefaultLimit, nil
	}
	raw := strings.TrimSpace(string(*r.Limit))
	if unq, err := strconv.Unquote(raw); err == nil {
		if strings.TrimSpace(unq) == "" {
			return 0, badLimit()
		}
		return ParseLimit(unq)
	}
	var f float64
	if err := json.Unmarshal([]byte(raw), &f); err != nil {
		return 0, badLimit()
	}
	switch {
	case f != float64(int64(f)) && f < DefaultLimit:
		return 0, badLimit() // a fraction
	case f > DefaultLimit:
		return DefaultLimit, nil
	case f < 1:
		return 0, badLimit()
	}
	return int(f), nil
}

func badLimit() *apierror.Error {
	return apierror.Validation("limit must be a whole number from 1 to 100.", map[string]string{"limit": "must be a whole number from 1 to 100"})
}

// Paginator ties a cursor codec to one query name.
type Paginator struct {
	Codec *cursor.Codec
	Query string
}

// Start decodes the cursor (nil or "" is the first page) for the filter.
func (p Paginator) Start(nextPage *string, limit int, filter any) (keyset.Seek, *apierror.Error) {
	ks := keyset.Seek{Limit: limit}
	if nextPage == nil || *nextPage == "" {
		return ks, nil
	}
	after, err := p.Codec.Decode(*nextPage, p.Query, filter)
	if err != nil {
		return ks, apierror.Validation("nextPage is not a cursor this search issued (it is malformed, altered, or from another filter).",
			map[string]string{"nextPage": "invalid cursor"})
	}
	ks.After = after
	return ks, nil
}

// Finish builds the response from up to Limit+1 rows fetched for ks.
func Finish[T any](p Paginator, ks keyset.Seek, rows []T, keyOf func(T) int64, filter any) Response[T] {
	resp := Response[T]{Data: rows}
	if resp.Data == nil {
		resp.Data = []T{}
	}
	if len(rows) > ks.Limit {
		resp.Data = rows[:ks.Limit]
		resp.HasMore = true
		next := p.Codec.Encode(p.Query, filter, keyOf(resp.Data[ks.Limit-1]))
		resp.NextPage = &next
	}
	return resp
}

// Render builds the response to a page the business layer cut: items in key
// order, the key of the last row read and whether there are more. The next
// cursor is bound to filter.
func Render[T, J any](p Paginator, items []T, last int64, more bool, filter any, render func(T) J) Response[J] {
	resp := Response[J]{Data: make([]J, len(items)), HasMore: more}
	for i, it := range items {
		resp.Data[i] = render(it)
	}
	if more {
		next := p.Codec.Encode(p.Query, filter, last)
		resp.NextPage = &next
	}
	return resp
}
