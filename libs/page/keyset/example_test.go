package keyset_test

import (
	"fmt"
	"sort"

	"github.com/eventreg/eventreg/libs/page/keyset"
)

// fetch is a store's query for one page: WHERE id > $After ORDER BY id
// LIMIT $Limit+1, here over a sorted slice of ids.
func fetch(ids []int64, s keyset.Seek) []int64 {
	i := sort.Search(len(ids), func(i int) bool { return ids[i] > s.After })
	return ids[i:min(len(ids), i+s.Limit+1)]
}

// A store fetches Limit+1 rows after the last key of the previous page: the
// extra row only tells that there is a next page, which starts after the
// last row shown.
func ExampleSeek() {
	ids := []int64{3, 5, 8, 13, 21, 34, 55}
	s := keyset.Seek{Limit: 3}
	for {
		rows := fetch(ids, s)
		more := len(rows) > s.Limit
		if more {
			rows = rows[:s.Limit]
		}
		fmt.Println(rows, "more:", more)
		if !more {
			break
		}
		s.After = rows[len(rows)-1]
	}
	// Output:
	// [3 5 8] more: true
	// [13 21 34] more: true
	// [55] more: false
}
