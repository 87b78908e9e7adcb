package testkit

import (
	"errors"

	"golang.org/x/oauth2"
)

// OAuthErrorCode is the OAuth error code of a token endpoint's refusal as
// golang.org/x/oauth2 reports it: "" for no error, the error's text for
// one that is not a refusal.
func OAuthErrorCode(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
