// Package keyset is the transport-free part of pagination that stores and
// business packages share: which rows one page of a keyset (seek) query
// fetches. The HTTP side (limits, cursors, the response shape) is package
// page, which only the API packages import.
package keyset

// Seek is what a store needs to fetch one page: rows with key > After, in
// key order, Limit+1 of them (the extra row tells whether there are more).
type Seek struct {
	After int64
	Limit int
}
