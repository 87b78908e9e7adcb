package apierror

import (
	"net/http"
)

// OAuth error codes of RFC 6749 section 5.2 and RFC 7009 / 8707.
const (
	OAuthInvalidRequest          = "invalid_request"
	OAuthInvalidClient           = "invalid_client"
	OAuthInvalidGrant            = "invalid_grant"
	OAuthUnauthorizedClient      = "unauthorized_client"
	OAuthUnsupportedGrantType    = "unsupported_grant_type"
	OAuthInvalidScope            = "invalid_scope"
	OAuthAccessDenied            = "access_denied"
	OAuthUnsupportedResponseType = "unsupported_response_type"
	OAuthServerError             = "server_error"
	OAuthTemporarilyUnavailable  = "temporarily_unavailable"
	OAuthUnsupportedTokenType    = "unsupported_token_type"
	OAuthSlowDown                = "slow_down"
)

// OAuthError is an RFC 6749 error response of the token, revocation or
// introspection endpoint.
type OAuthError struct {
	Status      int
	Code        string
	Description string
	Headers     map[string]string
}

func (e *OAuthError) Error() string { return e.Code + ": " + e.Description }

// NewOAuth returns an OAuth error with the status RFC 6749 gives its code.
func NewOAuth(code, description string) *OAuthError {
	status := http.StatusBadRequest
	switch code {
	case OAuthInvalidClient:
		status = http.StatusUnauthorized
	case OAuthServerError:
		status = http.StatusInternalServerError
	case OAuthTemporarilyUnavailable:
		status = http.StatusServiceUnavailable
	case OAuthSlowDown:
		status = http.StatusTooManyRequests
	}
	return &OAuthError{Status: status, Code: code, Description: description}
}

// Body returns the JSON body of the error.
func (e *OAuthError) Body() map[string]any {
	body := map[string]any{"error": e.Code}
	if e.Description != "" {
		body["error_description"] = e.Description
	}
	return body
}
