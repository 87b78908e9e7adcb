package e2e

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/eventreg/eventreg/e2e/stack"
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
	tokenOf := func(user, password string) string {
		t.Helper()
		tok, err := app.Exchange(context.Background(), newAuthHTTPBrowser(t, gw).code(app.AuthCodeURL("s"), user, password))
		if err != nil {
			t.Fatal(err)
		}
		return tok.AccessToken
	}
	alices, bobs := tokenOf(authAlice, authAlicePass), tokenOf(authBob, authBobPass)
	logout := func(q url.Values) string { return gw + "/oauth/logout?" + q.Encode() }
	ctx := chromium(t)
	appsPage := chromedp.WaitVisible(`//h1[contains(., "Your authorized apps")]`, chromedp.BySearch)
	signedIn := chromedp.Tasks{chromedp.Navigate(gw + "/oauth/apps"), appsPage}
	signOutButton := `//button[normalize-space(.)="Sign out"]`
	run(t, ctx, chromedp.Navigate(gw+"/oauth/login?next=/oauth/apps"), signIn(authAlice, authAlicePass), appsPage)

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
		run(t, ctx, signedIn)
	})
	t.Run("another user's token: the same confirmation, still signed in", func(t *testing.T) {
		var text string
		run(t, ctx, chromedp.Navigate(logout(url.Values{"client_id": {authBadgeID}, "access_token": {bobs}, "next": {authRedirectURI}})),
			chromedp.WaitVisible(signOutButton, chromedp.BySearch), chromedp.Text(`main`, &text, chromedp.ByQuery))
		if strings.Contains(strings.ToLower(text), "bob") {
			t.Fatalf("the page speaks of the token's user: %s", text)
		}
		cb.none(t)
		run(t, ctx, signedIn)
	})
	t.Run("the user's own token, confirmed: signed out and back at next", func(t *testing.T) {
		run(t, ctx, chromedp.Navigate(logout(url.Values{"client_id": {authBadgeID}, "access_token": {alices}, "next": {authRedirectURI}})),
			chromedp.WaitVisible(signOutButton, chromedp.BySearch))
		cb.none(t)
		run(t, ctx, signedIn)
		run(t, ctx, chromedp.Navigate(logout(url.Values{"client_id": {authBadgeID}, "access_token": {alices}, "next": {authRedirectURI}})),
			chromedp.WaitVisible(signOutButton, chromedp.BySearch), chromedp.Click(signOutButton, chromedp.BySearch),
			chromedp.WaitVisible(`#app-callback`, chromedp.ByQuery))
		cb.wait(t)
		run(t, ctx, chromedp.Navigate(gw+"/oauth/apps"), chromedp.WaitVisible(`#username`, chromedp.ByQuery))
	})
	t.Run("without client_id the token names the app; a next it does not own stays here", func(t *testing.T) {
		run(t, ctx, chromedp.Navigate(gw+"/oauth/login?next=/oauth/apps"), signIn(authAlice, authAlicePass), appsPage)
		run(t, ctx, chromedp.Navigate(logout(url.Values{"access_token": {alices}, "next": {"https://elsewhere.example/"}})),
			chromedp.WaitVisible(signOutButton, chromedp.BySearch), chromedp.Click(signOutButton, chromedp.BySearch),
			chromedp.WaitVisible(`//h1[contains(., "You are signed out")]`, chromedp.BySearch))
		cb.none(t)
		run(t, ctx, chromedp.Navigate(gw+"/oauth/login?next=/oauth/apps"), signIn(authAlice, authAlicePass), appsPage)
		run(t, ctx, chromedp.Navigate(logout(url.Values{"access_token": {alices}, "next": {authRedirectURI}})),
			chromedp.WaitVisible(signOutButton, chromedp.BySearch), chromedp.Click(signOutButton, chromedp.BySearch),
			chromedp.WaitVisible(`#app-callback`, chromedp.ByQuery))
		cb.wait(t)
	})
}
