// Package volunteersclient is the volunteers service's internal API used by the
// users service: whether a user volunteers and leads a department.
package volunteersclient

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/eventreg/eventreg/libs/svcclient"
)

// PathStatus is GET on the volunteers internal listener → Status.
const PathStatus = "/internal/users/:id/volunteer-status"

// Status of one user in the current convention.
type Status struct {
	IsVolunteer      bool `json:"isVolunteer"`
	IsDepartmentLead bool `json:"isDepartmentLead"`
}

// Client calls the volunteers internal API.
type Client struct{ c *svcclient.Client }

// NewClient returns a client for the volunteers internal listener at baseURL whose
// calls carry a service token from creds (the caller's servicetoken.Signer).
func NewClient(baseURL string, timeout time.Duration, creds svcclient.Credentials) *Client {
	return &Client{c: svcclient.New("volunteers", baseURL, timeout, creds)}
}

// Status returns the user's volunteer status (false, false for an unknown
// user); errors wrap svcclient.ErrUnavailable when volunteers cannot answer.
func (c *Client) Status(ctx context.Context, userID int64) (Status, error) {
	var st Status
	if err := c.c.Do(ctx, http.MethodGet, svcclient.UserPath(PathStatus, userID), nil, &st); err != nil {
		return Status{}, fmt.Errorf("fetching volunteer status of user %d: %w", userID, err)
	}
	return st, nil
}
