package e2e

import (
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

// TestLogoutAsAppsCallIt drives GET /oauth/logout?client_id=&access_token=&next=
// through the gateway in Chromium, as an app written for the real API sends
// its user there with its access token as a hint: the hint is checked, the
// user still confirms, and the browser comes back to next only when it is
// one of the app's redirect URIs. Another user's token changes nothing.
func TestLogoutAsAppsCallIt(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	gw := s.GatewayURL
	cb := startAuthCallback(t)
	app := authApp(gw, authBadgeID, authBadgeSecret, "pii:basic")
	alices := userToken(t, gw, app, authAlice, authAlicePass).AccessToken
	bobs := userToken(t, gw, app, authBob, authBobPass).AccessToken
	logout := func(q url.Values) string { return gw + "/oauth/logout?" + q.Encode() }
	ctx := chromium(t)
	run(t, ctx, signInToApps(gw, authAlice, authAlicePass))

	t.Run("a bad access_token is an error page and ends nothing", func(t *testing.T) {
		parts := strings.Split(alices, ".")
		parts[1] = parts[1][:len(parts[1])-2] + "AA"
		var text string
		run(t, ctx, chromedp.Navigate(logout(url.Values{"client_id": {authBadgeID}, "access_token": {strings.Join(parts, ".")}, "next": {authRedirectURI}})),
			chromedp.WaitVisible(`//h1[contains(., "Invalid sign-out request")]`, chromedp.BySearch), chromedp.Text(`main`, &text, chromedp.ByQuery))
		if !strings.Contains(text, "not an access token of this server") {
			t.Fatalf("%s", text)
		}
		cb.none(t)
		run(t, ctx, stillSignedIn(gw))
	})
	t.Run("another user's token: the same confirmation, still signed in", func(t *testing.T) {
		var text string
		run(t, ctx, chromedp.Navigate(logout(url.Values{"client_id": {authBadgeID}, "access_token": {bobs}, "next": {authRedirectURI}})),
			chromedp.WaitVisible(signOutButton, chromedp.BySearch), chromedp.Text(`main`, &text, chromedp.ByQuery))
		if strings.Contains(strings.ToLower(text), "bob") {
			t.Fatalf("the page speaks of the token's user: %s", text)
		}
		cb.none(t)
		run(t, ctx, stillSignedIn(gw))
	})
	t.Run("the user's own token, confirmed: signed out and back at next", func(t *testing.T) {
		run(t, ctx, chromedp.Navigate(logout(url.Values{"client_id": {authBadgeID}, "access_token": {alices}, "next": {authRedirectURI}})),
			chromedp.WaitVisible(signOutButton, chromedp.BySearch))
		cb.none(t)
		run(t, ctx, stillSignedIn(gw))
		run(t, ctx, chromedp.Navigate(logout(url.Values{"client_id": {authBadgeID}, "access_token": {alices}, "next": {authRedirectURI}})),
			confirmSignOut(), backInTheApp())
		cb.wait(t)
		run(t, ctx, nowSignedOut(gw))
	})
	t.Run("without client_id the token names the app; a next it does not own stays here", func(t *testing.T) {
		run(t, ctx, signInToApps(gw, authAlice, authAlicePass))
		run(t, ctx, chromedp.Navigate(logout(url.Values{"access_token": {alices}, "next": {"https://elsewhere.example/"}})),
			confirmSignOut(), signedOutPage())
		cb.none(t)
		run(t, ctx, signInToApps(gw, authAlice, authAlicePass))
		run(t, ctx, chromedp.Navigate(logout(url.Values{"access_token": {alices}, "next": {authRedirectURI}})),
			confirmSignOut(), backInTheApp())
		cb.wait(t)
	})
}

// TestLogoutThroughTheGatewayNeedsConfirmation: a signed-in browser's session
// survives a GET of /oauth/logout sent from another origin (an image) or
// followed as a link, and ends only with the confirmed POST of the Sign out
// button, which then returns to the app.
func TestLogoutThroughTheGatewayNeedsConfirmation(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	gw := s.GatewayURL
	cb := startAuthCallback(t)
	ctx := chromium(t)
	run(t, ctx, signInToApps(gw, authAlice, authAlicePass))
	// Another site's page (another origin of the same site, so the
	// SameSite=Lax session cookie goes along) embeds the logout URL.
	back := url.Values{"next": {authRedirectURI}, "client_id": {authBadgeID}}
	logout := gw + "/oauth/logout?" + back.Encode()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>elsewhere</title><img src="`+html.EscapeString(logout)+
			`" onload="document.title='fetched'" onerror="document.title='fetched'">`)
	}))
	defer other.Close()
	run(t, ctx, stillSignedIn(gw))
	run(t, ctx, chromedp.Navigate(other.URL), chromedp.Poll(`document.title === "fetched"`, nil))
	run(t, ctx, stillSignedIn(gw))
	// Followed as a link (a top-level GET): the confirmation page, still signed in.
	run(t, ctx, chromedp.Navigate(logout), chromedp.WaitVisible(signOutButton, chromedp.BySearch))
	cb.none(t)
	run(t, ctx, stillSignedIn(gw))
	// Confirmed: signed out, and back at the app.
	run(t, ctx, chromedp.Navigate(logout), confirmSignOut(), backInTheApp())
	cb.wait(t)
	run(t, ctx, nowSignedOut(gw))

	t.Run("an HTTP client that is not a browser confirms the same way and returns to the app", func(t *testing.T) {
		b := newAuthHTTPBrowser(t, gw)
		b.token(authApp(gw, authBadgeID, authBadgeSecret, "pii:basic"), authAlice, authAlicePass)
		status, _, page := b.do(http.MethodGet, logout, nil)
		if status != http.StatusOK || !strings.Contains(page, ">Sign out</button>") {
			t.Fatalf("want the confirmation page: %d\n%s", status, page)
		}
		back.Set("csrf_token", testkit.PageField(t, testkit.CSRFField, page))
		status, h, _ := b.do(http.MethodPost, gw+"/oauth/logout", back)
		if status != http.StatusSeeOther || h.Get("Location") != authRedirectURI {
			t.Fatalf("%d %v", status, h)
		}
	})
}
