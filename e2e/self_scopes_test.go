package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
)

// TestSelfScopesThroughTheGateway: a user's own token reads that user's
// registration (con:read) and orders (pii:finance:read) through the gateway
// and users' forward; another user's id is a 403 of the documented shape.
func TestSelfScopesThroughTheGateway(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	gw, ctx := s.GatewayURL, context.Background()
	// get reads path with token, checking the answer against the API document.
	get := func(t *testing.T, path, token string) (int, http.Header, []byte) {
		t.Helper()
		r := sendChecked(t, s, http.MethodGet, path, token, "")
		return r.status, r.header, []byte(r.body)
	}
	// companionToken is a token of the companion app for user, with scopes.
	companionToken := func(t *testing.T, user, password string, scopes ...string) *oauth2.Token {
		t.Helper()
		return userToken(t, gw, authApp(gw, companionID, companionSecret, scopes...), user, password)
	}
	forbidden := func(t *testing.T, status int, body []byte) {
		t.Helper()
		var e struct {
			Errors struct {
				Access *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"access"`
			} `json:"errors"`
		}
		if status != http.StatusForbidden || json.Unmarshal(body, &e) != nil || e.Errors.Access == nil || e.Errors.Access.Code != 3000 {
			t.Fatalf("want 403 access 3000: %d %s", status, body)
		}
	}
	alice := companionToken(t, authAlice, authAlicePass, "pii:basic", "con:read", "pii:finance:read").AccessToken
	bob := companionToken(t, authBob, authBobPass, "con:read", "pii:finance:read").AccessToken

	t.Run("con:read: the signed-in user's own registration", func(t *testing.T) {
		status, _, body := get(t, "/api/v0/users/1001/registration", alice)
		var reg struct {
			BadgeName string
			Order     *struct{ OrderID string }
			User      struct{ ID string }
		}
		if status != 200 || json.Unmarshal(body, &reg) != nil || reg.BadgeName != "Al the Great" || reg.User.ID != "1001" ||
			reg.Order == nil || reg.Order.OrderID != "601" {
			t.Fatalf("%d %s", status, body)
		}
		if status, _, body := get(t, "/api/v0/users/1002/registration", bob); status != 200 {
			t.Fatalf("bob's own: %d %s", status, body)
		}
	})
	t.Run("con:read: another user's registration is 403", func(t *testing.T) {
		status, _, body := get(t, "/api/v0/users/1002/registration", alice)
		forbidden(t, status, body)
		status, _, body = get(t, "/api/v0/users/1001/registration", bob)
		forbidden(t, status, body)
	})
	t.Run("pii:finance:read: the signed-in user's own orders", func(t *testing.T) {
		status, _, body := get(t, "/api/v0/users/1001/orders", alice)
		var orders struct {
			Data []struct {
				ID, ConventionID, Status string
				Items                    []struct{ ProductID string }
			}
		}
		if status != 200 || json.Unmarshal(body, &orders) != nil || len(orders.Data) != 1 || orders.Data[0].ID != "601" ||
			orders.Data[0].ConventionID != "2026" || orders.Data[0].Status != "paid" || len(orders.Data[0].Items) != 1 ||
			orders.Data[0].Items[0].ProductID != "7" {
			t.Fatalf("%d %s", status, body)
		}
		status, _, body = get(t, "/api/v0/users/1002/orders", bob)
		if status != 200 || string(body) != `{"data":[]}` {
			t.Fatalf("bob has no order: %d %s", status, body)
		}
	})
	t.Run("pii:finance:read: another user's orders are 403", func(t *testing.T) {
		status, _, body := get(t, "/api/v0/users/1001/orders", bob)
		forbidden(t, status, body)
	})
	t.Run("a token without con:read is refused its own registration", func(t *testing.T) {
		only := companionToken(t, authAlice, authAlicePass, "pii:basic").AccessToken
		status, h, body := get(t, "/api/v0/users/1001/registration", only)
		if status != 403 || h.Get("WWW-Authenticate") == "" {
			t.Fatalf("%d %v %s", status, h, body)
		}
	})
	t.Run("order:view (client credentials) reads any user's orders", func(t *testing.T) {
		tok, err := clientCredentials(gw, volSyncID, volSyncSecret, oauth2.AuthStyleInHeader, "order:view").Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.Extra("scope"); got != "order:view" {
			t.Errorf("granted scope %v", got)
		}
		status, _, body := get(t, "/api/v0/users/1001/orders", tok.AccessToken)
		if status != 200 || !json.Valid(body) {
			t.Fatalf("%d %s", status, body)
		}
	})
}
