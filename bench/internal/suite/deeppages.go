package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/eventreg/eventreg/bench/internal/dataset"
	"github.com/eventreg/eventreg/bench/internal/report"
	"github.com/eventreg/eventreg/libs/cursor"
)

// findDeepPages makes the cursors of the deep pages: it asks the service for
// the first page's cursor and reissues it (same query and filter, same key)
// to continue after the key found in the database at the wanted depth. Each
// deep cursor is then checked to open a full page.
func (env *environment) findDeepPages(ctx context.Context, codec *cursor.Codec, counts dataset.Counts) {
	type deepPage struct {
		first, deep, path, filter string
		after                     func() (int64, string, error)
	}
	pages := []deepPage{
		{report.UsersSearchFirst, report.UsersSearchDeep, "/api/v0/users/search", "", func() (int64, string, error) {
			depth := counts.Users * 9 / 10
			id, err := env.store.UserAtDepth(ctx, depth)
			return id, fmt.Sprintf("the page after user %d, at depth %d of %d generated users", id, depth, counts.Users), err
		}},
		{report.UsersRoleFirst, report.UsersRoleDeep, "/api/v0/users/search", fmt.Sprintf(`"filter":{"roleId":%d},`, counts.FirstRoleID), func() (int64, string, error) {
			total, after, err := env.store.RoleMemberBeforeLastPage(ctx, counts.FirstRoleID, conventionID, 100)
			return after, fmt.Sprintf("the last page of the %d members of role %d", total, counts.FirstRoleID), err
		}},
		{report.RegistrationsFirst, report.RegistrationsDeep, "/api/v0/registration/search", "", func() (int64, string, error) {
			total, after, err := env.store.RegistrationBeforeLastPage(ctx, conventionID, 100)
			return after, fmt.Sprintf("the last page of %d registrations", total), err
		}},
	}
	for _, p := range pages {
		first := "{" + p.filter + `"limit":100}`
		env.firstBodies[p.first] = first
		if counts.FirstRoleID == 0 && p.filter != "" {
			env.unavailable[p.first], env.unavailable[p.deep] = "no generated role", "no generated role"
			continue
		}
		cur, err := env.deepCursor(ctx, codec, p.path, first, p.after)
		if err != nil {
			env.unavailable[p.deep] = err.Error()
			continue
		}
		env.deep[p.deep] = "{" + p.filter + `"limit":100,"nextPage":"` + cur + `"}`
	}
}

func (env *environment) deepCursor(ctx context.Context, codec *cursor.Codec, path, firstBody string, after func() (int64, string, error)) (string, error) {
	var page struct {
		Data     []json.RawMessage `json:"data"`
		NextPage *string           `json:"nextPage"`
	}
	if err := env.postJSON(ctx, path, firstBody, &page); err != nil {
		return "", err
	}
	if page.NextPage == nil {
		return "", errors.New("the first page has no next page: too little data")
	}
	key, what, err := after()
	if err != nil {
		return "", err
	}
	deep, err := codec.Reissue(*page.NextPage, key)
	if err != nil {
		return "", fmt.Errorf("the service's cursor is not one of CURSOR_KEY: %w", err)
	}
	var check struct {
		Data []json.RawMessage `json:"data"`
	}
	body := firstBody[:len(firstBody)-1] + `,"nextPage":"` + deep + `"}`
	if err := env.postJSON(ctx, path, body, &check); err != nil {
		return "", fmt.Errorf("deep page: %w", err)
	}
	if len(check.Data) != 100 {
		return "", fmt.Errorf("deep page (%s) holds %d rows, want 100", what, len(check.Data))
	}
	env.notes = append(env.notes, fmt.Sprintf("%s: %s.", path, what))
	return deep, nil
}

func (env *environment) postJSON(ctx context.Context, path, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+env.serviceToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := env.httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s answered %d: %.300s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("POST %s: decoding the page: %w", path, err)
	}
	return nil
}
