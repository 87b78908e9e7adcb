package page

import (
	"encoding/json"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/userid"
)

// MaxFilterUserIDs is the most ids filter.userIds takes.
const MaxFilterUserIDs = 100

// UsersRequest is the body of a search of users' records that may be
// narrowed to some users by filter.userIds (registrations, dealers).
type UsersRequest struct {
	Request
	Filter *struct {
		UserIDs json.RawMessage `json:"userIds"`
	} `json:"filter"`
}

// UserIDs reads filter.userIds, ids given as strings or numbers
// (userid.ParseList), at most MaxFilterUserIDs: nil when the body names no
// users (every user), else the sorted ids, possibly none.
func (r UsersRequest) UserIDs() ([]int64, *apierror.Error) {
	if r.Filter == nil {
		return nil, nil
	}
	ids, err := userid.ParseList(r.Filter.UserIDs, MaxFilterUserIDs)
	if err != nil {
		return nil, apierror.Validation("filter.userIds "+err.Error()+".", map[string]string{"filter.userIds": err.Error()})
	}
	return ids, nil
}

// usersCursor is what a cursor of a search narrowed to some users is bound
// to, so that it only continues that search.
type usersCursor struct {
	UserIDs []int64 `json:"u"`
}

// UsersFilter is the cursor filter (Paginator.Start, Render) of a search
// narrowed to userIDs: nil, no filter, for every user.
func UsersFilter(userIDs []int64) any {
	if userIDs == nil {
		return nil
	}
	return usersCursor{UserIDs: userIDs}
}
