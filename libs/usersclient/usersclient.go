// Package usersclient is the users service's internal API: the wire types and a
// client, shared by the users service (server side) and by auth, volunteers
// and registrations (callers). Paths are on the users internal listener.
package usersclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/eventreg/eventreg/libs/svcclient"
)

// Internal paths.
const (
	PathSummaries   = "/internal/users/summaries"       // POST SummariesRequest → SummariesResponse
	PathVerify      = "/internal/credentials/verify"    // POST VerifyRequest → 200 VerifyResponse | 401
	PathAccount     = "/internal/credentials/account"   // POST AccountRequest → 200 AccountResponse | 404
	PathPermissions = "/internal/users/:id/permissions" // GET → PermissionsResponse | 404
)

// AnswerHeader marks the answers that are the users service's verdict on a
// user: its 404 for a user it does not hold (AnswerNoSuchUser) and its 401
// for wrong credentials (AnswerBadCredentials). A 404 or 401 without it
// comes from something else at USERS_INTERNAL_URL (a wrong host or path, a
// proxy), and the client reports it as the dependency failing: read as
// "no such user", it would revoke every family on refresh.
const (
	AnswerHeader         = "Eventreg-Answer"
	AnswerNoSuchUser     = "no-such-user"
	AnswerBadCredentials = "bad-credentials"
)

// judge reads a call's error: a status answer carrying AnswerHeader = mark
// is the verdict; the same status without the mark is the dependency
// failing; anything else is err as it was.
func judge(err error, status int, mark string, verdict error) error {
	var se *svcclient.StatusError
	if !errors.As(err, &se) || se.Status != status {
		return err
	}
	if se.Header.Get(AnswerHeader) == mark {
		return verdict
	}
	return &svcclient.UnavailableError{Service: "users",
		Err: fmt.Errorf("answered %d without the users service's %s header: is USERS_INTERNAL_URL right?", status, AnswerHeader)}
}

// MaxSummaryIDs is the most ids one summaries call takes.
const MaxSummaryIDs = 100

// UserSummary is a user embedded in volunteer, department and registration
// objects (field names as the public API renders them).
type UserSummary struct {
	ID            string  `json:"id"`
	FirstName     string  `json:"firstName"`
	LastName      string  `json:"lastName"`
	Username      string  `json:"username"`
	PreferredName *string `json:"preferredName"`
	Phone         *string `json:"phone"`
	Email         string  `json:"email"`
}

// SummariesRequest asks for up to MaxSummaryIDs users.
type SummariesRequest struct {
	IDs []int64 `json:"ids"`
}

// SummariesResponse has the users found; unknown ids are absent.
type SummariesResponse struct {
	Data []UserSummary `json:"data"`
}

// VerifyRequest checks a username (or email) and password.
type VerifyRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// VerifyResponse names the user whose credentials matched.
type VerifyResponse struct {
	UserID int64 `json:"userId"`
}

// AccountRequest names an account by username or email.
type AccountRequest struct {
	Username string `json:"username"`
}

// AccountResponse is the id of the account named.
type AccountResponse struct {
	UserID int64 `json:"userId"`
}

// PermissionsResponse lists the permissions a user holds through roles,
// global and for the current convention.
type PermissionsResponse struct {
	UserID      int64    `json:"userId"`
	Permissions []string `json:"permissions"`
}

// Client calls the users internal API.
type Client struct{ c *svcclient.Client }

// NewClient returns a client for the users internal listener at baseURL whose
// calls carry a service token from creds (the caller's servicetoken.Signer).
func NewClient(baseURL string, timeout time.Duration, creds svcclient.Credentials) *Client {
	return &Client{c: svcclient.New("users", baseURL, timeout, creds)}
}

// Summaries returns the users with the given ids (at most MaxSummaryIDs),
// keyed by id. Errors wrap svcclient.ErrUnavailable when users cannot answer.
func (c *Client) Summaries(ctx context.Context, ids []int64) (map[int64]UserSummary, error) {
	out := make(map[int64]UserSummary, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	if len(ids) > MaxSummaryIDs {
		return nil, fmt.Errorf("usersclient: %d ids in one call, at most %d", len(ids), MaxSummaryIDs)
	}
	var resp SummariesResponse
	if err := c.c.Do(ctx, http.MethodPost, PathSummaries, SummariesRequest{IDs: ids}, &resp); err != nil {
		return nil, fmt.Errorf("fetching user summaries: %w", err)
	}
	for _, u := range resp.Data {
		id, err := strconv.ParseInt(u.ID, 10, 64)
		if err == nil {
			out[id] = u
		}
	}
	return out, nil
}

// ErrBadCredentials is returned by Verify when the username or password is wrong.
var ErrBadCredentials = fmt.Errorf("bad credentials")

// Verify checks credentials and returns the user id, ErrBadCredentials, or an
// error wrapping svcclient.ErrUnavailable.
func (c *Client) Verify(ctx context.Context, username, password string) (int64, error) {
	var resp VerifyResponse
	err := judge(c.c.Do(ctx, http.MethodPost, PathVerify, VerifyRequest{Username: username, Password: password}, &resp),
		http.StatusUnauthorized, AnswerBadCredentials, ErrBadCredentials)
	if errors.Is(err, ErrBadCredentials) {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("verifying credentials: %w", err)
	}
	return resp.UserID, nil
}

// ErrNotFound is returned when the user does not exist.
var ErrNotFound = fmt.Errorf("user not found")

// Account returns the id of the account a username or email names (case is
// ignored), ErrNotFound, or an error wrapping svcclient.ErrUnavailable.
func (c *Client) Account(ctx context.Context, login string) (int64, error) {
	var resp AccountResponse
	err := judge(c.c.Do(ctx, http.MethodPost, PathAccount, AccountRequest{Username: login}, &resp),
		http.StatusNotFound, AnswerNoSuchUser, ErrNotFound)
	if errors.Is(err, ErrNotFound) {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("resolving an account: %w", err)
	}
	return resp.UserID, nil
}

// Permissions returns the permissions a user holds.
func (c *Client) Permissions(ctx context.Context, userID int64) ([]string, error) {
	var resp PermissionsResponse
	err := judge(c.c.Do(ctx, http.MethodGet, svcclient.UserPath(PathPermissions, userID), nil, &resp),
		http.StatusNotFound, AnswerNoSuchUser, ErrNotFound)
	if errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("fetching permissions of user %d: %w", userID, err)
	}
	return resp.Permissions, nil
}
