package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/e2e/stack"
)

// TestVolunteersAndRegistrations drives the volunteers and registrations
// services through the gateway with the real auth and users services and the
// demo fixture.
func TestVolunteersAndRegistrations(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	// call sends a request through the gateway, checking the answer against the API document.
	call := func(t *testing.T, method, path, tok, body string) (int, []byte) {
		t.Helper()
		r := sendChecked(t, s, method, path, tok, body)
		return r.status, []byte(r.body)
	}
	tracker := serviceToken(t, s, trackerID, trackerSecret, "volunteer:read", "registration:read")

	t.Run("a user's registration carries its order and user summary", func(t *testing.T) {
		status, body := call(t, http.MethodGet, "/api/v0/users/1001/registration", tracker, "")
		var reg struct {
			Status, BadgeName, ProductID string
			Order                        *struct{ OrderID string }
			User                         struct{ ID, Username string }
		}
		_ = json.Unmarshal(body, &reg)
		if status != 200 || reg.Status != "paid" || reg.ProductID != "7" || reg.Order == nil || reg.Order.OrderID != "601" ||
			reg.User.ID != "1001" || reg.User.Username != "alice" {
			t.Fatalf("%d %s", status, body)
		}
	})
	t.Run("registration search filters by ids given as strings and numbers", func(t *testing.T) {
		status, body := call(t, http.MethodPost, "/api/v0/registration/search", tracker, `{"filter": {"userIds": ["1003", 1001]}}`)
		var p struct {
			Data    []struct{ User struct{ ID string } }
			HasMore bool
		}
		_ = json.Unmarshal(body, &p)
		if status != 200 || len(p.Data) != 2 || p.Data[0].User.ID != "1001" || p.Data[1].User.ID != "1003" || p.HasMore {
			t.Fatalf("%d %s", status, body)
		}
	})
	t.Run("a walk of one-item pages sees every registration once", func(t *testing.T) {
		var seen []string
		next := ""
		for range 20 {
			body := `{"limit": 1}`
			if next != "" {
				body = `{"limit": 1, "nextPage": "` + next + `"}`
			}
			status, b := call(t, http.MethodPost, "/api/v0/registration/search", tracker, body)
			var p struct {
				Data     []struct{ User struct{ ID string } }
				NextPage *string
				HasMore  bool
			}
			_ = json.Unmarshal(b, &p)
			if status != 200 {
				t.Fatalf("%d %s", status, b)
			}
			for _, r := range p.Data {
				seen = append(seen, r.User.ID)
			}
			if !p.HasMore {
				break
			}
			next = *p.NextPage
		}
		if strings.Join(seen, ",") != "1001,1002,1003,1005" {
			t.Fatalf("saw %v", seen)
		}
	})
	t.Run("volunteer search, a volunteer record and departments", func(t *testing.T) {
		status, body := call(t, http.MethodPost, "/api/v0/volunteers/search", tracker, `{}`)
		if status != 200 || strings.Count(string(body), `"createdAt"`) != 3 || !strings.Contains(string(body), `"hasMore":false`) {
			t.Fatalf("search %d %s", status, body)
		}
		status, body = call(t, http.MethodGet, "/api/v0/users/1003/volunteer", tracker, "")
		if status != 200 || !strings.Contains(string(body), `"name":"Registration"`) || !strings.Contains(string(body), `"username":"carol"`) {
			t.Fatalf("volunteer %d %s", status, body)
		}
		status, body = call(t, http.MethodGet, "/api/v0/volunteers/departments", tracker, "")
		var deps []struct {
			ID    string
			Leads []struct{ ID string }
		}
		_ = json.Unmarshal(body, &deps)
		if status != 200 || len(deps) != 3 || len(deps[0].Leads) != 1 || deps[0].Leads[0].ID != "1003" {
			t.Fatalf("departments %d %s", status, body)
		}
		if status, body := call(t, http.MethodGet, "/api/v0/users/1001/volunteer", tracker, ""); status != 404 {
			t.Fatalf("non-volunteer %d %s", status, body)
		}
	})
	t.Run("a token without the scope is 403", func(t *testing.T) {
		reader := serviceToken(t, s, readerID, readerSecret, "registration:read")
		if status, body := call(t, http.MethodPost, "/api/v0/volunteers/search", reader, `{}`); status != 403 {
			t.Fatalf("%d %s", status, body)
		}
	})
	t.Run("an operator's payment is visible at once with a new updatedAt", func(t *testing.T) {
		_, before := call(t, http.MethodGet, "/api/v0/users/1002/registration", tracker, "")
		s.Command(t, "registrations", "record-payment", "1002", "--order-id", "777")
		status, after := call(t, http.MethodGet, "/api/v0/users/1002/registration", tracker, "")
		var b, a struct {
			Status, UpdatedAt string
			Order             *struct{ OrderID string }
		}
		_ = json.Unmarshal(before, &b)
		_ = json.Unmarshal(after, &a)
		if status != 200 || a.Status != "paid" || a.Order == nil || a.Order.OrderID != "777" || a.UpdatedAt == b.UpdatedAt {
			t.Fatalf("before %s after %s", before, after)
		}
	})
	t.Run("users service down gives 503 quickly, not a hang", func(t *testing.T) {
		users := s.Services["users"]
		users.Stop()
		defer users.Restart(t)
		for _, c := range []struct{ method, path, body string }{
			{http.MethodGet, "/api/v0/users/1001/registration", ""},
			{http.MethodPost, "/api/v0/volunteers/search", `{}`},
		} {
			start := time.Now()
			status, body := call(t, c.method, c.path, tracker, c.body)
			if status != 503 || time.Since(start) > 5*time.Second {
				t.Fatalf("%s: %d after %v: %s", c.path, status, time.Since(start), body)
			}
		}
	})
}
