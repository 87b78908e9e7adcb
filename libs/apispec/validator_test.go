package apispec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
)

var (
	sharedValidator = sync.OnceValues(NewValidator)
	jsonHeader      = http.Header{"Content-Type": {"application/json; charset=utf-8"}}
)

func validator(t *testing.T) *Validator {
	t.Helper()
	v, err := sharedValidator()
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	return v
}

// Samples of valid objects, as the services render them.
const (
	userSummary = `{"id":"1001","firstName":"Alice","lastName":"Liddell","username":"alice","preferredName":"Al","phone":"+15555550100","email":"alice@example.org"}`
	serviceUser = `{"id":"1001","email":"alice@example.org","preferredName":null,"firstName":"Alice","lastName":"Liddell",` +
		`"username":"alice","verified":true,"phone":"+15555550100","address":{"addressLine1":"1 Main St","addressLine2":null,` +
		`"addressCity":"Springfield","addressState":"IL","addressZipcode":"62701","addressCountry":"US"}}`
	currentUser = `{"sub":"1001","id":1001,"bornAt":"1990-04-01","firstName":"Alice","lastName":"Liddell","preferredName":"Al",` +
		`"username":"alice","newsletter":false,"emailVerified":true,"identityVerified":true,"isVolunteer":true,` +
		`"permissions":["user:read"],"profilePictureUrl":"https://cdn.example.org/u/1001.png","isDepartmentLead":true,` +
		`"userRoles":[{"id":"1","name":"staff"}]}`
	volunteer = `{"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:05Z",` +
		`"contactMethods":[{"name":"discord","value":"alice#0001","isPrimary":true}],` +
		`"departments":[{"id":"10","name":"Registration","states":["experience","interest","assignment"]}],` +
		`"user":` + userSummary + `,"options":[{"name":"Shirt size","type":"select","value":"M"},{"name":"Hours","type":"number","value":12}]}`
	department   = `{"id":"10","email":"reg@example.org","name":"Registration","publiclyVisible":true,"leads":[` + userSummary + `]}`
	registration = `{"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-03T03:04:05Z","badgeName":"Al the Great","status":"paid",` +
		`"productName":"Sponsor","productDisplayName":"Sponsor Weekend","productId":"7",` +
		`"options":[{"name":"Days","type":"multi","value":["Fri","Sat"]}],"flags":[{"id":"3","shortName":"VIP"}],` +
		`"user":` + userSummary + `,"order":{"orderId":"601"}}`
	tokenResponse = `{"access_token":"eyJ...","token_type":"Bearer","expires_in":3600,"scope":"user:read registration:read"}`
	activeToken   = `{"active":true,"scope":"pii:basic","client_id":"502","sub":"1001","username":"alice","exp":1790000000,` +
		`"iat":1789996400,"iss":"https://127.0.0.1:8443","aud":"eventreg-api","token_type":"Bearer"}`
	metadata = `{"issuer":"https://127.0.0.1:8443","authorization_endpoint":"https://127.0.0.1:8443/oauth/authorize",` +
		`"token_endpoint":"https://127.0.0.1:8443/api/oauth/token","jwks_uri":"https://127.0.0.1:8443/.well-known/jwks.json",` +
		`"response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}`
	jwks = `{"keys":[{"kty":"EC","kid":"k1","use":"sig","alg":"ES256","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`
)

// with returns the JSON object obj with key set to the raw JSON value (or
// removed when value is "").
func with(obj, key, value string) string {
	var m map[string]any
	if err := jsonUnmarshal(obj, &m); err != nil {
		panic(err)
	}
	if value == "" {
		delete(m, key)
	} else {
		var v any
		if err := jsonUnmarshal(value, &v); err != nil {
			panic(err)
		}
		m[key] = v
	}
	return jsonMarshal(m)
}

func page(items ...string) string {
	next := `null`
	return `{"data":[` + strings.Join(items, ",") + `],"nextPage":` + next + `,"hasMore":false}`
}

// rendered runs abort (apireply.Abort or AbortOAuth of an error) through
// gin, as a service would send the error.
func rendered(abort func(*gin.Context)) (int, http.Header, []byte) {
	gin.SetMode(gin.TestMode)
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	abort(c)
	return rec.Code, rec.Header(), rec.Body.Bytes()
}

type responseCase struct {
	name         string
	method, path string
	status       int
	header       http.Header
	body         string
	valid        bool
}

func jsonResponse(name, method, path string, status int, body string, valid bool) responseCase {
	return responseCase{name: name, method: method, path: path, status: status, header: jsonHeader, body: body, valid: valid}
}

func apiError(name, method, path string, e *apierror.Error, valid bool) responseCase {
	status, header, body := rendered(func(c *gin.Context) { apireply.Abort(c, e) })
	return responseCase{name: name, method: method, path: path, status: status, header: header, body: string(body), valid: valid}
}

func TestValidateResponse(t *testing.T) {
	const (
		users    = "/api/v0/users/search"
		regs     = "/api/v0/registration/search"
		vols     = "/api/v0/volunteers/search"
		me       = "/api/users/current"
		userRole = "/api/v0/users/1001/roles/1"
	)
	unauthorized := apierror.Unauthenticated(true)
	noLimit := apierror.Unauthenticated(false)
	noLimit.Headers = nil
	wrongMessage := apierror.Unauthenticated(false)
	wrongMessage.Message = "Bad token"

	cases := []responseCase{
		// users
		jsonResponse("users page", "POST", users, 200, page(serviceUser, with(serviceUser, "address", "null")), true),
		jsonResponse("users page with a next page", "POST", users,
			200, `{"data":[`+serviceUser+`],"nextPage":"eyJsYXN0SWQiOjEwMDF9","hasMore":true}`, true),
		jsonResponse("users page without address and preferredName", "POST", users, 200,
			page(with(with(serviceUser, "address", ""), "preferredName", "")), true),
		jsonResponse("users page with extra fields", "POST", users, 200,
			`{"data":[`+with(serviceUser, "createdAt", `"2026-01-01T00:00:00Z"`)+`],"nextPage":null,"hasMore":false,"total":1}`, true),
		jsonResponse("users page with data null", "POST", users, 200, `{"data":null,"nextPage":null,"hasMore":false}`, false),
		jsonResponse("users page without hasMore", "POST", users, 200, `{"data":[],"nextPage":null}`, false),
		jsonResponse("users page without nextPage", "POST", users, 200, `{"data":[],"hasMore":false}`, false),
		jsonResponse("hasMore with a null nextPage", "POST", users, 200, `{"data":[],"nextPage":null,"hasMore":true}`, false),
		jsonResponse("a cursor on the last page", "POST", users, 200, `{"data":[],"nextPage":"abc","hasMore":false}`, false),
		jsonResponse("user with a numeric id", "POST", users, 200, page(with(serviceUser, "id", `1001`)), false),
		jsonResponse("user with a non-numeric id", "POST", users, 200, page(with(serviceUser, "id", `"u1001"`)), false),
		jsonResponse("user with a boolean phone", "POST", users, 200, page(with(serviceUser, "phone", `true`)), false),
		jsonResponse("user without verified", "POST", users, 200, page(with(serviceUser, "verified", "")), false),
		jsonResponse("user with an address of numbers", "POST", users, 200,
			page(with(serviceUser, "address", `{"addressCity":1}`)), false),
		jsonResponse("user", "GET", "/api/v0/users/1001", 200, serviceUser, true),
		jsonResponse("user wrapped in data", "GET", "/api/v0/users/1001", 200, `{"data":`+serviceUser+`}`, false),
		jsonResponse("current user", "GET", me, 200, currentUser, true),
		jsonResponse("current user with every pii scope", "GET", "/api/users/1001", 200,
			with(with(with(with(currentUser, "email", `"alice@example.org"`), "phone", `"+15555550100"`),
				"addressCity", `"Springfield"`), "addressLine2", `null`), true),
		jsonResponse("current user without userRoles", "GET", me, 200, with(currentUser, "userRoles", ""), false),
		jsonResponse("current user with a string id", "GET", me, 200, with(currentUser, "id", `"1001"`), false),
		jsonResponse("current user with a timestamp as bornAt", "GET", me, 200,
			with(currentUser, "bornAt", `"1990-04-01T00:00:00Z"`), false),
		jsonResponse("roles page", "GET", "/api/v0/roles?limit=1000&nextPage=", 200,
			page(`{"id":"1","name":"staff"}`, `{"id":"2","name":"agreement-signed"}`), true),
		jsonResponse("role with a numeric id", "GET", "/api/v0/roles", 200, page(`{"id":1,"name":"staff"}`), false),
		jsonResponse("user roles", "GET", "/api/v0/users/1001/roles", 200,
			`{"data":[{"id":"1","name":"staff","scope":"global"},{"id":"2","name":"agreement-signed","scope":"convention"}]}`, true),
		jsonResponse("user role of another scope", "GET", "/api/v0/users/1001/roles", 200,
			`{"data":[{"id":"1","name":"staff","scope":"local"}]}`, false),
		{name: "role added", method: "PUT", path: userRole, status: 204, valid: true},
		{name: "role removed", method: "DELETE", path: userRole, status: 204, valid: true},
		{name: "204 with a body", method: "PUT", path: userRole, status: 204, header: jsonHeader, body: `{}`, valid: false},
		apiError("role already held", "PUT", userRole, apierror.Conflict(apierror.CodeUserWasAlreadyAdded, "The user already has the role."), true),
		apiError("role not held", "DELETE", userRole, apierror.NotFound("The user does not have the role."), true),

		// volunteers
		jsonResponse("volunteers page", "POST", vols, 200, page(volunteer), true),
		jsonResponse("volunteer", "GET", "/api/v0/users/1001/volunteer", 200, volunteer, true),
		jsonResponse("volunteer with an unknown department state", "GET", "/api/v0/users/1001/volunteer", 200,
			with(volunteer, "departments", `[{"id":"10","name":"Registration","states":["bored"]}]`), false),
		jsonResponse("volunteer option with an object value", "GET", "/api/v0/users/1001/volunteer", 200,
			with(volunteer, "options", `[{"name":"x","type":"text","value":{"a":1}}]`), false),
		jsonResponse("volunteer without user", "GET", "/api/v0/users/1001/volunteer", 200, with(volunteer, "user", ""), false),
		jsonResponse("departments", "GET", "/api/v0/volunteers/departments", 200, `[`+department+`]`, true),
		jsonResponse("no departments", "GET", "/api/v0/volunteers/departments", 200, `[]`, true),
		jsonResponse("departments wrapped in data", "GET", "/api/v0/volunteers/departments", 200, page(department), false),

		// registrations
		jsonResponse("registration", "GET", "/api/v0/users/1001/registration", 200, registration, true),
		jsonResponse("registration without order or display name", "GET", "/api/v0/users/1001/registration", 200,
			with(with(registration, "order", "null"), "productDisplayName", "null"), true),
		jsonResponse("registration with status foo", "GET", "/api/v0/users/1001/registration", 200,
			with(registration, "status", `"foo"`), false),
		jsonResponse("registration without the order field", "GET", "/api/v0/users/1001/registration", 200,
			with(registration, "order", ""), false),
		jsonResponse("registration with a numeric orderId", "GET", "/api/v0/users/1001/registration", 200,
			with(registration, "order", `{"orderId":601}`), false),
		jsonResponse("registration option of an unknown type", "GET", "/api/v0/users/1001/registration", 200,
			with(registration, "options", `[{"name":"Days","type":"checkbox","value":"Fri"}]`), false),
		jsonResponse("registrations page", "POST", regs, 200, page(registration), true),
		jsonResponse("registrations page with a bad record", "POST", regs, 200, page(with(registration, "status", `"foo"`)), false),

		// errors of the resource endpoints, rendered by libs/apierror
		apiError("expired token", "GET", me, unauthorized, true),
		apiError("missing token", "POST", users, apierror.MissingToken(), true),
		apiError("401 without WWW-Authenticate", "POST", users, noLimit, false),
		apiError("401 with another message", "POST", users, wrongMessage, false),
		apiError("insufficient scope", "POST", regs, apierror.InsufficientScope("registration:read"), true),
		apiError("forbidden record", "GET", "/api/users/1002", apierror.Forbidden("Only the current user."), true),
		apiError("bad limit", "POST", vols, apierror.Validation("limit must be a number from 1.", map[string]string{"limit": "must be at least 1"}), true),
		apiError("unknown user", "GET", "/api/v0/users/9", apierror.NotFound("No such user."), true),
		apiError("body too large", "POST", users, apierror.BodyTooLarge(1<<20), true),
		apiError("not JSON", "POST", regs, apierror.UnsupportedMediaType("application/json"), true),
		apiError("rate limited", "GET", "/api/v0/roles", apierror.RateLimited(2*time.Second), true),
		apiError("database down", "GET", "/api/v0/volunteers/departments", apierror.Unavailable("The database"), true),
		apiError("internal", "GET", "/api/v0/users/1001/registration", apierror.Internal("abc123"), true),
		apiError("a 404 body for a 400", "POST", users, &apierror.Error{Status: 400, Category: "resource", Message: "x"}, false),
		jsonResponse("an undocumented status", "GET", me, http.StatusTeapot, `{"errors":{"resource":{"message":"x"}}}`, false),
		jsonResponse("an error without errors", "GET", "/api/v0/users/9", 404, `{"message":"not found"}`, false),
		jsonResponse("an unknown error category", "GET", "/api/v0/users/9", 404, `{"errors":{"resource":{"message":"x"},"oops":{"message":"y"}}}`, false),
		{name: "nginx 503", method: "GET", path: "/api/v0/roles", status: 503,
			header: http.Header{"Content-Type": {"application/json"}, "Retry-After": {"1"}},
			body:   `{"errors":{"server":{"message":"The service is temporarily unavailable; try again shortly."}}}`, valid: true},
		{name: "JSON body sent as text/plain", method: "GET", path: "/api/v0/users/1001", status: 200,
			header: http.Header{"Content-Type": {"text/plain"}}, body: serviceUser, valid: false},

		// oauth
		jsonResponse("client credentials token", "POST", "/api/oauth/token", 200, tokenResponse, true),
		jsonResponse("refreshable token", "POST", "/api/oauth/token", 200, with(tokenResponse, "refresh_token", `"r1"`), true),
		jsonResponse("lower-case token type", "POST", "/api/oauth/token", 200, with(tokenResponse, "token_type", `"bearer"`), false),
		jsonResponse("expires_in as a string", "POST", "/api/oauth/token", 200, with(tokenResponse, "expires_in", `"3600"`), false),
		jsonResponse("token without scope", "POST", "/api/oauth/token", 200, with(tokenResponse, "scope", ""), false),
		{name: "revoked", method: "POST", path: "/api/oauth/revoke", status: 200, valid: true},
		jsonResponse("inactive token", "POST", "/api/oauth/introspect", 200, `{"active":false}`, true),
		jsonResponse("inactive token saying more", "POST", "/api/oauth/introspect", 200, `{"active":false,"sub":"1001"}`, false),
		jsonResponse("active token", "POST", "/api/oauth/introspect", 200, activeToken, true),
		jsonResponse("active refresh token without exp (RFC 7662: optional)", "POST", "/api/oauth/introspect", 200, with(activeToken, "exp", ""), true),
		jsonResponse("active token without client_id", "POST", "/api/oauth/introspect", 200, with(activeToken, "client_id", ""), false),
		jsonResponse("server metadata", "GET", "/.well-known/oauth-authorization-server", 200, metadata, true),
		jsonResponse("server metadata without issuer", "GET", "/.well-known/oauth-authorization-server", 200, with(metadata, "issuer", ""), false),
		jsonResponse("jwks", "GET", "/.well-known/jwks.json", 200, jwks, true),
		jsonResponse("jwks with a private key", "GET", "/.well-known/jwks.json", 200,
			strings.Replace(jwks, `"kty"`, `"d":"secret","kty"`, 1), false),
		{name: "root page", method: "GET", path: "/", status: 200,
			header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, body: "<!doctype html><title>API</title>", valid: true},
		{name: "authorize redirect", method: "GET", path: "/oauth/authorize?client_id=502&response_type=code", status: 302,
			header: http.Header{"Location": {"http://127.0.0.1:9999/callback?code=abc&state=xyz"}}, valid: true},
		{name: "authorize redirect without Location", method: "GET", path: "/oauth/authorize", status: 302, valid: false},
		{name: "authorize error page", method: "GET", path: "/oauth/authorize", status: 400,
			header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, body: "<p>Invalid request</p>", valid: true},

		// routing
		jsonResponse("an absolute URL on another host", "GET", "https://api.example.org:8443/api/v0/users/1001", 200, serviceUser, true),
		jsonResponse("a path outside the API", "GET", "/api/v1/users/1001", 200, serviceUser, false),
		jsonResponse("a method outside the API", "PATCH", "/api/v0/users/1001", 200, serviceUser, false),
	}
	for _, code := range []string{apierror.OAuthInvalidRequest, apierror.OAuthInvalidClient, apierror.OAuthInvalidGrant,
		apierror.OAuthInvalidScope, apierror.OAuthUnsupportedGrantType, apierror.OAuthSlowDown,
		apierror.OAuthServerError, apierror.OAuthTemporarilyUnavailable} {
		e := apierror.NewOAuth(code, "described")
		if code == apierror.OAuthSlowDown || code == apierror.OAuthTemporarilyUnavailable {
			e.Headers = map[string]string{"Retry-After": "1"}
		}
		status, header, body := rendered(func(c *gin.Context) { apireply.AbortOAuth(c, e) })
		cases = append(cases, responseCase{name: "oauth " + code, method: "POST", path: "/api/oauth/token",
			status: status, header: header, body: string(body), valid: true})
	}
	cases = append(cases, jsonResponse("oauth unknown error code", "POST", "/api/oauth/token", 400,
		`{"error":"invalid_token"}`, false))
	cases = append(cases, jsonResponse("oauth error in the resource shape", "POST", "/api/oauth/token", 400,
		`{"errors":{"validation":{"message":"x"}}}`, false))

	v := validator(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			err := v.ValidateResponse(req, tc.status, tc.header, []byte(tc.body))
			switch {
			case tc.valid && err != nil:
				t.Errorf("want accepted, got %v", err)
			case !tc.valid && err == nil:
				t.Errorf("want rejected, was accepted: %d %s", tc.status, tc.body)
			case err != nil:
				t.Logf("rejected as expected: %.300s", err)
			}
		})
	}
}

func TestValidateRequest(t *testing.T) {
	cases := []struct {
		name         string
		method, path string
		contentType  string
		body         string
		valid        bool
	}{
		{"token, form with repeated scopes", "POST", "/api/oauth/token", "application/x-www-form-urlencoded",
			"grant_type=client_credentials&scope=user:read&scope=registration:read", true},
		{"token, form", "POST", "/api/oauth/token", "application/x-www-form-urlencoded",
			"grant_type=authorization_code&client_id=502&code=abc&redirect_uri=http%3A%2F%2F127.0.0.1%3A9999%2Fcallback" +
				"&code_verifier=dBjftJeZ4CVP-mJ92K9of2znLzI7dK6G5cJmS0o6Fb-bBkLmYlXaTmUDQwqLKqJq", true},
		{"token, JSON", "POST", "/api/oauth/token", "application/json",
			`{"grant_type":"refresh_token","refresh_token":"r1","scope":"pii:basic"}`, true},
		{"token, unknown grant type", "POST", "/api/oauth/token", "application/x-www-form-urlencoded", "grant_type=password", false},
		{"token, no grant type", "POST", "/api/oauth/token", "application/json", `{"client_id":"1"}`, false},
		{"revoke", "POST", "/api/oauth/revoke", "application/x-www-form-urlencoded", "token=r1&token_type_hint=refresh_token", true},
		{"introspect without token", "POST", "/api/oauth/introspect", "application/x-www-form-urlencoded", "token_type_hint=access_token", false},
		{"roles, limit above 100 and empty cursor", "GET", "/api/v0/roles?limit=1000&nextPage=", "", "", true},
		{"roles, limit 0", "GET", "/api/v0/roles?limit=0", "", "", false},
		{"roles, limit not a number", "GET", "/api/v0/roles?limit=ten", "", "", false},
		{"users search, empty object", "POST", "/api/v0/users/search", "application/json", `{}`, true},
		{"users search, no body", "POST", "/api/v0/users/search", "", "", true},
		{"users search by email", "POST", "/api/v0/users/search", "application/json", `{"filter":{"email":"A@example.org"},"limit":1}`, true},
		{"users search by role id string", "POST", "/api/v0/users/search", "application/json", `{"filter":{"roleId":"12"},"nextPage":"abc"}`, true},
		{"users search by role id number", "POST", "/api/v0/users/search", "application/json", `{"filter":{"roleId":12}}`, true},
		{"users search by a non-numeric role id", "POST", "/api/v0/users/search", "application/json", `{"filter":{"roleId":"staff"}}`, false},
		{"users search, limit 150", "POST", "/api/v0/users/search", "application/json", `{"limit":150}`, true},
		{"users search, limit 0", "POST", "/api/v0/users/search", "application/json", `{"limit":0}`, false},
		{"users search, limit as a string", "POST", "/api/v0/users/search", "application/json", `{"limit":"10"}`, false},
		{"volunteers search", "POST", "/api/v0/volunteers/search", "application/json", `{"limit":50}`, true},
		{"registrations by mixed ids", "POST", "/api/v0/registration/search", "application/json", `{"filter":{"userIds":["1001",1002]}}`, true},
		{"registrations by 101 ids", "POST", "/api/v0/registration/search", "application/json",
			`{"filter":{"userIds":[` + strings.TrimSuffix(strings.Repeat(`"1",`, 101), ",") + `]}}`, false},
		{"add role", "PUT", "/api/v0/users/1001/roles/1", "application/json", `{"scope":"convention"}`, true},
		{"add role of another scope", "PUT", "/api/v0/users/1001/roles/1", "application/json", `{"scope":"local"}`, false},
		{"add role without scope", "PUT", "/api/v0/users/1001/roles/1", "application/json", `{}`, false},
		{"authorize", "GET", "/oauth/authorize?client_id=502&response_type=code&redirect_uri=x&scope=pii:basic&state=s" +
			"&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256", "", "", true},
		{"authorize, implicit flow", "GET", "/oauth/authorize?client_id=502&response_type=token&redirect_uri=x&scope=pii:basic", "", "", false},
		{"docs as yaml", "GET", "/api/docs?format=yaml", "", "", true},
	}
	v := validator(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req := httptest.NewRequest(tc.method, tc.path, body)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			err := v.ValidateRequest(req)
			switch {
			case tc.valid && err != nil:
				t.Errorf("want accepted, got %v", err)
			case !tc.valid && err == nil:
				t.Error("want rejected, was accepted")
			}
			if tc.body != "" {
				if got, _ := io.ReadAll(req.Body); string(got) != tc.body {
					t.Errorf("the body was not put back: %q", got)
				}
			}
		})
	}
}

func TestValidateHTTPResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v0/users/1001" {
			_, _ = io.WriteString(w, serviceUser)
			return
		}
		_, _ = io.WriteString(w, `{"data":null,"nextPage":null,"hasMore":false}`)
	}))
	defer srv.Close()
	v := validator(t)

	t.Run("a valid response, body kept", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/api/v0/users/1001")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := v.ValidateHTTPResponse(resp); err != nil {
			t.Errorf("want accepted, got %v", err)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != serviceUser {
			t.Errorf("the body was not put back: %q", b)
		}
	})
	t.Run("an invalid response", func(t *testing.T) {
		resp, err := http.Post(srv.URL+"/api/v0/users/search", "application/json", bytes.NewReader([]byte(`{}`)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := v.ValidateHTTPResponse(resp); err == nil {
			t.Error("want rejected (data null), was accepted")
		}
	})
	t.Run("no request", func(t *testing.T) {
		if err := v.ValidateHTTPResponse(&http.Response{StatusCode: 200}); err == nil {
			t.Error("want an error for a response without its request")
		}
	})
}

func TestValidateResponseShortensHugeErrors(t *testing.T) {
	var items []string
	for range 100 {
		items = append(items, with(serviceUser, "verified", `"yes"`))
	}
	req := httptest.NewRequest("POST", "/api/v0/users/search", nil)
	err := validator(t).ValidateResponse(req, 200, jsonHeader, []byte(page(items...)))
	if err == nil {
		t.Fatal("want rejected")
	}
	if n := len(err.Error()); n > maxErrorLen+100 {
		t.Errorf("the error message has %d bytes", n)
	}
	var full *shortenedError
	if errors.As(err, &full) && full.Unwrap() == nil {
		t.Error("the shortened error lost its cause")
	}
}

func TestValidatorIsSafeForConcurrentUse(t *testing.T) {
	v := validator(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Go(func() {
			req := httptest.NewRequest("GET", fmt.Sprintf("/api/v0/users/%d/registration", 1000+i), nil)
			if err := v.ValidateResponse(req, 200, jsonHeader, []byte(registration)); err != nil {
				errs <- err
			}
			req = httptest.NewRequest("GET", "/api/v0/users/1/registration", nil)
			if err := v.ValidateResponse(req, 200, jsonHeader, []byte(with(registration, "status", `"foo"`))); err == nil {
				errs <- errors.New("an invalid registration was accepted")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
