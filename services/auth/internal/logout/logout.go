// Package logout holds the rules of signing out of the pages: which sign-out requests are valid (an app's access_token hint, and RP-Initiated Logout 1.0's id_token_hint, post_logout_redirect_uri and state), ending the session, and where the browser goes once signed out. It speaks no HTTP: pagesapi reads the request and renders the pages.
package logout

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/idtoken"
)

// Clients looks registered apps up (client.Service).
type Clients interface {
	// Lookup returns the client, client.ErrNotFound when there is none.
	Lookup(ctx context.Context, id int64) (client.Client, error)
}

// AccessTokenHints reads the access token an app sends as a hint
// (accesstoken.Issuer).
type AccessTokenHints interface {
	ReadHint(raw string) (accesstoken.Claims, error)
}

// IDTokenHints reads an id_token_hint (idtoken.Issuer).
type IDTokenHints interface {
	ReadHint(raw string) (idtoken.Claims, error)
}

// Sessions ends browser sessions (session.Store).
type Sessions interface {
	Delete(ctx context.Context, id string) error
}

// Service applies the rules.
type Service struct {
	Clients      Clients
	AccessTokens AccessTokenHints
	IDTokens     IDTokenHints
	Sessions     Sessions
}

// Request is a sign-out request as sent: the page's query, or its
// confirmation form (which carries no hints: what the page validated is
// checked again).
type Request struct {
	ClientID, AccessToken, IDTokenHint, PostLogoutRedirectURI, State, Next string
}

// Plan is a validated sign-out.
type Plan struct {
	// ClientID names the app (client_id, or the hint's app); "" for none.
	ClientID string
	// PostLogoutRedirectURI and State are an RP-initiated logout's: where
	// the browser goes once signed out, with state.
	PostLogoutRedirectURI, State string
	// Next is where an app written for the real API asks the browser to go.
	Next string
}

// InvalidError is a sign-out request an app got wrong: answered with a 400
// page, nothing ended. AccessTokenHint says the access_token was at fault.
type InvalidError struct {
	Why             string
	AccessTokenHint bool
}

func (e *InvalidError) Error() string { return "invalid sign-out request: " + e.Why }

// maxState bounds the state an app may send back through the confirmation form.
const maxState = 512

// Check validates r. It returns an *InvalidError, or an error when the
// client registry cannot answer.
func (s *Service) Check(ctx context.Context, r Request) (Plan, error) {
	clientID, err := s.accessTokenClient(r.ClientID, r.AccessToken)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{ClientID: clientID, State: r.State, Next: r.Next}
	// RP-Initiated Logout 1.0 §2: an id_token_hint must be an ID token of
	// this server (expired or not) and names the client when client_id
	// does not (they must agree); a post_logout_redirect_uri must be
	// registered for that client, exactly.
	if r.IDTokenHint != "" {
		claims, err := s.IDTokens.ReadHint(r.IDTokenHint)
		if err != nil {
			return Plan{}, &InvalidError{Why: "The id_token_hint is not an ID token of this server."}
		}
		if p.ClientID != "" && p.ClientID != claims.Audience {
			return Plan{}, &InvalidError{Why: "The id_token_hint was issued to another app than client_id."}
		}
		p.ClientID = claims.Audience
	}
	if len(r.State) > maxState {
		return Plan{}, &InvalidError{Why: "The state is longer than 512 characters."}
	}
	if r.PostLogoutRedirectURI == "" {
		return p, nil
	}
	id, ok := client.ParseID(p.ClientID)
	if !ok {
		return Plan{}, &InvalidError{Why: "A post_logout_redirect_uri needs client_id or id_token_hint."}
	}
	cl, err := s.Clients.Lookup(ctx, id)
	if err != nil && !errors.Is(err, client.ErrNotFound) {
		return Plan{}, fmt.Errorf("reading client %d: %w", id, err)
	}
	if err != nil || !cl.HasPostLogoutRedirectURI(r.PostLogoutRedirectURI) {
		return Plan{}, &InvalidError{Why: "The post_logout_redirect_uri is not one registered for this app."}
	}
	p.PostLogoutRedirectURI = r.PostLogoutRedirectURI
	return p, nil
}

// accessTokenClient checks the access_token hint of a sign-out request, as
// apps written for the real API send it (GET
// /oauth/logout?client_id=&access_token=&next=), and returns the client
// whose redirect URIs next may be: clientID, or the token's app when
// clientID is absent. The hint must be an access token this server signed,
// of clientID's app when both are given. Beyond that the hint decides
// nothing: whose token it is never changes the page, so it neither signs
// anyone out nor tells the app who is signed in (decision 0099).
func (s *Service) accessTokenClient(clientID, raw string) (string, error) {
	if raw == "" {
		return clientID, nil
	}
	hint, err := s.AccessTokens.ReadHint(raw)
	if err != nil {
		return "", &InvalidError{Why: "Its access_token is not an access token of this server.", AccessTokenHint: true}
	}
	if clientID == "" {
		return hint.ClientID, nil
	}
	if id, ok := client.ParseID(clientID); !ok || strconv.FormatInt(id, 10) != hint.ClientID {
		return "", &InvalidError{Why: "Its access_token was issued to another app than its client_id.", AccessTokenHint: true}
	}
	return clientID, nil
}

// End ends the session id ("" for none).
func (s *Service) End(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	if err := s.Sessions.Delete(ctx, id); err != nil {
		return fmt.Errorf("deleting a session: %w", err)
	}
	return nil
}

// Destination is where the signed-out browser goes: the RP-initiated
// logout's post_logout_redirect_uri with its state, or Next when it is a
// registered redirect URI of the app; "" for the signed-out page.
func (s *Service) Destination(ctx context.Context, p Plan) string {
	if p.PostLogoutRedirectURI != "" {
		return withState(p.PostLogoutRedirectURI, p.State)
	}
	id, ok := client.ParseID(p.ClientID)
	if !ok || p.Next == "" {
		return ""
	}
	if cl, err := s.Clients.Lookup(ctx, id); err == nil && cl.HasRedirectURI(p.Next) {
		return p.Next
	}
	return ""
}

// withState is uri with state added to its query ("" adds nothing).
func withState(uri, state string) string {
	if state == "" {
		return uri
	}
	u, _ := url.Parse(uri)
	q := u.Query()
	q.Set("state", state)
	u.RawQuery = q.Encode()
	return u.String()
}
