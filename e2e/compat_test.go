package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/e2e/stack"
)

// TestCompatibility replays, through the gateway, the request sequences that
// programs written for the real API send (compat-notes.md): each must work
// unchanged. The client times out after 5 s, as one of those programs does.
func TestCompatibility(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	gw := s.GatewayURL
	c := &http.Client{Timeout: 5 * time.Second}

	// call sends a request as such a program does (a JSON body when body is not empty).
	call := func(t *testing.T, method, path, token, body string) (int, []byte) {
		t.Helper()
		req, err := newRequest(gw, method, path, token, body)
		if err != nil {
			t.Fatal(err)
		}
		r := mustDo(t, c, req)
		return r.status, []byte(r.body)
	}
	// token asks for a token with form, the app's credentials in HTTP
	// Basic, and returns the JSON answer.
	token := func(t *testing.T, form url.Values) map[string]any {
		t.Helper()
		r := mustDo(t, c, newFormRequest(gw, "/api/oauth/token", trackerID, trackerSecret, form))
		var out map[string]any
		if r.status != 200 || json.Unmarshal([]byte(r.body), &out) != nil {
			t.Fatalf("token: %d %s", r.status, r.body)
		}
		if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Fatalf("token Content-Type %q", r.header.Get("Content-Type"))
		}
		return out
	}
	allScopes := url.Values{"grant_type": {"client_credentials"}, "scope": {"user:read user:roles:update volunteer:read registration:read"}}
	tok := token(t, allScopes)["access_token"].(string)

	t.Run("GET / answers before any token", func(t *testing.T) {
		if status, _ := call(t, "GET", "/", "", ""); status != 200 {
			t.Fatalf("status %d", status)
		}
	})

	t.Run("401 then token then retry", func(t *testing.T) {
		status, body := call(t, "POST", "/api/v0/volunteers/search", "", "{}")
		if status != 401 || !bytes.Contains(body, []byte("Invalid token.")) {
			t.Fatalf("without a token: %d %s", status, body)
		}
		status, body = call(t, "POST", "/api/v0/volunteers/search", "stale-or-garbage", "{}")
		if status != 401 || !bytes.Contains(body, []byte("Invalid token.")) {
			t.Fatalf("with a bad token: %d %s", status, body)
		}
		fresh := token(t, url.Values{"grant_type": {"client_credentials"}, "scope": {"volunteer:read"}})["access_token"].(string)
		if status, body := call(t, "POST", "/api/v0/volunteers/search", fresh, "{}"); status != 200 {
			t.Fatalf("retry: %d %s", status, body)
		}
	})

	t.Run("repeated scope fields mean all of them", func(t *testing.T) {
		out := token(t, url.Values{"grant_type": {"client_credentials"}, "scope": {"user:read", "registration:read"}})
		got := strings.Fields(out["scope"].(string))
		if len(got) != 2 || !strings.Contains(out["scope"].(string), "user:read") || !strings.Contains(out["scope"].(string), "registration:read") {
			t.Fatalf("scope %q", out["scope"])
		}
	})

	t.Run("Basic-only client authentication and a JSON body", func(t *testing.T) {
		req, _ := newRequest(gw, "POST", "/api/oauth/token", "", `{"grant_type":"client_credentials","scope":"user:read"}`)
		req.SetBasicAuth(trackerID, trackerSecret)
		if r := mustDo(t, c, req); r.status != 200 || !strings.Contains(r.body, `"access_token"`) || !strings.Contains(r.body, `"token_type":"Bearer"`) {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})

	t.Run("token errors are JSON too", func(t *testing.T) {
		r := mustDo(t, c, newFormRequest(gw, "/api/oauth/token", trackerID, trackerSecret, url.Values{"grant_type": {"password"}}))
		if r.status != 400 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || !strings.Contains(r.body, "unsupported_grant_type") {
			t.Fatalf("%d %s %s", r.status, r.header.Get("Content-Type"), r.body)
		}
	})

	type pageResp struct {
		Data     []map[string]any `json:"data"`
		NextPage *string          `json:"nextPage"`
		HasMore  *bool            `json:"hasMore"`
	}
	decodePage := func(t *testing.T, status int, body []byte) pageResp {
		t.Helper()
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var p pageResp
		if err := json.Unmarshal(body, &p); err != nil || p.Data == nil || p.HasMore == nil {
			t.Fatalf("not a page (data array, hasMore, nextPage): %s", body)
		}
		if *p.HasMore != (p.NextPage != nil) {
			t.Fatalf("hasMore %v with nextPage %v", *p.HasMore, p.NextPage)
		}
		return p
	}

	getPage := func(t *testing.T, method, path, body string) pageResp {
		t.Helper()
		status, b := call(t, method, path, tok, body)
		return decodePage(t, status, b)
	}

	t.Run("paging with {} and no limit", func(t *testing.T) {
		for _, path := range []string{"/api/v0/volunteers/search", "/api/v0/registration/search", "/api/v0/users/search"} {
			p := getPage(t, "POST", path, "{}")
			if len(p.Data) == 0 || *p.HasMore {
				t.Fatalf("%s: %d rows, hasMore %v", path, len(p.Data), *p.HasMore)
			}
		}
	})

	t.Run("walk with hasMore until false", func(t *testing.T) {
		var ids []string
		next := ""
		for i := 0; i < 20; i++ {
			body := `{"limit":2}`
			if next != "" {
				body = `{"limit":2,"nextPage":"` + next + `"}`
			}
			p := getPage(t, "POST", "/api/v0/users/search", body)
			for _, u := range p.Data {
				ids = append(ids, u["id"].(string))
			}
			if !*p.HasMore {
				break
			}
			next = *p.NextPage
		}
		if len(ids) != 5 || ids[0] != "1001" || ids[4] != "1005" {
			t.Fatalf("walk saw %v", ids)
		}
	})

	t.Run("roles listing with limit=1000&nextPage=", func(t *testing.T) {
		p := getPage(t, "GET", "/api/v0/roles?limit=1000&nextPage=", "")
		if len(p.Data) != 5 || *p.HasMore {
			t.Fatalf("%d roles, hasMore %v", len(p.Data), *p.HasMore)
		}
	})

	t.Run("lookup by email with limit 1", func(t *testing.T) {
		p := getPage(t, "POST", "/api/v0/users/search", `{"filter":{"email":"dave.mixed@EXAMPLE.org"},"limit":1}`)
		if len(p.Data) != 1 || p.Data[0]["id"] != "1004" {
			t.Fatalf("got %v", p.Data)
		}
		p = getPage(t, "POST", "/api/v0/users/search", `{"filter":{"email":"nobody@example.org"},"limit":1}`)
		if len(p.Data) != 0 {
			t.Fatalf("got %v", p.Data)
		}
	})

	t.Run("404 on an unknown user means no such user", func(t *testing.T) {
		if status, body := call(t, "GET", "/api/v0/users/424242", tok, ""); status != 404 {
			t.Fatalf("%d %s", status, body)
		}
	})

	t.Run("grant, grant again, revoke, revoke again", func(t *testing.T) {
		path := "/api/v0/users/1002/roles/5"
		steps := []struct {
			method, body string
			status       int
		}{
			{"PUT", `{"scope":"convention"}`, 204},
			{"PUT", `{"scope":"convention"}`, 409},
			{"DELETE", "", 204},
			{"DELETE", "", 404},
		}
		for _, st := range steps {
			if status, body := call(t, st.method, path, tok, st.body); status != st.status {
				t.Fatalf("%s: %d %s, want %d", st.method, status, body, st.status)
			}
		}
		status, body := call(t, "GET", "/api/v0/users/1002/roles", tok, "")
		if status != 200 || bytes.Contains(body, []byte(`"agreement-signed"`)) {
			t.Fatalf("roles after revoke: %d %s", status, body)
		}
	})

	t.Run("registration order number and integer productId", func(t *testing.T) {
		status, body := call(t, "GET", "/api/v0/users/1001/registration", tok, "")
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		var reg struct {
			Status    string `json:"status"`
			BadgeName string `json:"badgeName"`
			ProductID string `json:"productId"`
			Order     *struct {
				OrderID string `json:"orderId"`
			} `json:"order"`
		}
		if err := json.Unmarshal(body, &reg); err != nil {
			t.Fatal(err)
		}
		if _, err := strconv.Atoi(reg.ProductID); err != nil || reg.Order == nil || reg.Order.OrderID != "601" || reg.Status != "paid" {
			t.Fatalf("registration %s", body)
		}
		p := getPage(t, "POST", "/api/v0/registration/search", `{"filter":{"userIds":["1001",1002]}}`)
		if len(p.Data) != 2 {
			t.Fatalf("search by user ids: %v", p.Data)
		}
		for _, r := range p.Data {
			user := r["user"].(map[string]any)
			switch user["id"] {
			case "1001":
				if r["order"].(map[string]any)["orderId"] != "601" {
					t.Fatalf("order %v", r["order"])
				}
			case "1002":
				if r["order"] != nil {
					t.Fatalf("registration without an order has order %v", r["order"])
				}
			}
		}
	})

	t.Run("volunteer fields programs read", func(t *testing.T) {
		status, body := call(t, "GET", "/api/v0/users/1003/volunteer", tok, "")
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		var v struct {
			User           map[string]any   `json:"user"`
			Departments    []map[string]any `json:"departments"`
			ContactMethods []map[string]any `json:"contactMethods"`
		}
		_ = json.Unmarshal(body, &v)
		for _, k := range []string{"id", "username", "firstName", "lastName", "preferredName", "email", "phone"} {
			if _, ok := v.User[k]; !ok {
				t.Fatalf("user lacks %s: %s", k, body)
			}
		}
		if len(v.Departments) == 0 || v.Departments[0]["states"] == nil || len(v.ContactMethods) == 0 || v.ContactMethods[0]["isPrimary"] == nil {
			t.Fatalf("volunteer %s", body)
		}
		status, body = call(t, "GET", "/api/v0/volunteers/departments", tok, "")
		if status != 200 || !bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
			t.Fatalf("departments are not a bare array: %d %s", status, body)
		}
	})
}
