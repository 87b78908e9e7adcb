package grantapi

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/jsonbody"
)

// params are the request parameters of an OAuth endpoint, from a
// form-encoded or a JSON body, and the HTTP Basic credentials if any.
type params struct {
	values      url.Values
	basic       bool
	basicID     string
	basicSecret string
}

// get returns the single value of name. More than one value is an error
// (RFC 6749 §3.2), except for scope, which callers read with all.
func (p params) get(name string) (string, *apierror.OAuthError) {
	v := p.values[name]
	switch len(v) {
	case 0:
		return "", nil
	case 1:
		return v[0], nil
	default:
		return "", oauthErr(apierror.OAuthInvalidRequest, "The parameter "+name+" is repeated.")
	}
}

func (p params) all(name string) []string { return p.values[name] }

func oauthErr(code, desc string) *apierror.OAuthError { return apierror.NewOAuth(code, desc) }

// readParams reads the body of an OAuth endpoint: form-encoded (RFC 6749) or
// JSON (real clients retry with JSON). Scopes may repeat in either.
func readParams(c *gin.Context) (params, *apierror.OAuthError) {
	p := params{values: url.Values{}}
	if h := c.GetHeader("Authorization"); h != "" {
		id, secret, ok := parseBasic(h)
		if !ok {
			e := oauthErr(apierror.OAuthInvalidClient, "The Authorization header is not valid HTTP Basic client authentication.")
			e.Headers = map[string]string{"WWW-Authenticate": basicChallenge}
			return p, e
		}
		p.basic, p.basicID, p.basicSecret = true, id, secret
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		if httpserver.IsBodyTooLarge(err) {
			return p, &apierror.OAuthError{Status: http.StatusRequestEntityTooLarge, Code: apierror.OAuthInvalidRequest, Description: "The request body is too large."}
		}
		return p, oauthErr(apierror.OAuthInvalidRequest, "The request body could not be read.")
	}
	mt := "application/x-www-form-urlencoded"
	if ct := c.GetHeader("Content-Type"); ct != "" {
		parsed, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return p, unsupportedMedia()
		}
		mt = parsed
	}
	switch {
	case mt == "application/x-www-form-urlencoded":
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return p, oauthErr(apierror.OAuthInvalidRequest, "The form-encoded body is malformed.")
		}
		p.values = vals
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		vals, e := parseJSON(body)
		if e != nil {
			return p, e
		}
		p.values = vals
	default:
		return p, unsupportedMedia()
	}
	return p, nil
}

func unsupportedMedia() *apierror.OAuthError {
	return &apierror.OAuthError{Status: http.StatusUnsupportedMediaType, Code: apierror.OAuthInvalidRequest,
		Description: "The body must be application/x-www-form-urlencoded or application/json."}
}

// parseJSON accepts an object whose values are strings, numbers (client_id
// sent as a number) or arrays of strings (scope).
func parseJSON(body []byte) (url.Values, *apierror.OAuthError) {
	if err := jsonbody.Check(body); err != nil {
		return nil, oauthErr(apierror.OAuthInvalidRequest, err.Error())
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, oauthErr(apierror.OAuthInvalidRequest, "The JSON body must be an object.")
	}
	vals := url.Values{}
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) == nil {
			vals.Set(k, s)
			continue
		}
		var n json.Number
		if json.Unmarshal(v, &n) == nil && n != "" {
			vals.Set(k, n.String())
			continue
		}
		var ss []string
		if json.Unmarshal(v, &ss) == nil && k == "scope" {
			vals[k] = ss
			continue
		}
		if string(v) == "null" {
			continue
		}
		return nil, oauthErr(apierror.OAuthInvalidRequest, "The field "+k+" must be a string.")
	}
	return vals, nil
}

const basicChallenge = `Basic realm="eventreg", charset="UTF-8"`

// parseBasic decodes HTTP Basic client credentials; both parts are
// form-urlencoded first (RFC 6749 §2.3.1).
func parseBasic(h string) (id, secret string, ok bool) {
	const prefix = "basic "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[len(prefix):]))
	if err != nil {
		return "", "", false
	}
	id, secret, ok = strings.Cut(string(raw), ":")
	if !ok {
		return "", "", false
	}
	if u, err := url.QueryUnescape(id); err == nil {
		id = u
	}
	if u, err := url.QueryUnescape(secret); err == nil {
		secret = u
	}
	return id, secret, true
}

// credentials returns the client id and secret, from Basic or the body.
func (p params) credentials() (id, secret string, e *apierror.OAuthError) {
	bodyID, e := p.get("client_id")
	if e != nil {
		return "", "", e
	}
	bodySecret, e := p.get("client_secret")
	if e != nil {
		return "", "", e
	}
	if p.basic {
		if bodySecret != "" {
			return "", "", oauthErr(apierror.OAuthInvalidRequest, "Use one client authentication method: HTTP Basic or client_secret in the body, not both.")
		}
		if bodyID != "" && bodyID != p.basicID {
			return "", "", oauthErr(apierror.OAuthInvalidRequest, "client_id in the body differs from the one of HTTP Basic.")
		}
		return p.basicID, p.basicSecret, nil
	}
	if bodyID == "" || bodySecret == "" {
		e := oauthErr(apierror.OAuthInvalidClient, "Client authentication is required (HTTP Basic, or client_id and client_secret).")
		e.Headers = map[string]string{"WWW-Authenticate": basicChallenge}
		return "", "", e
	}
	return bodyID, bodySecret, nil
}
