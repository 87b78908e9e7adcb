package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium starts a headless Chromium (Debian's /usr/bin/chromium) with a
// fresh profile and returns a browser context; extra adds flags.
func chromium(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	exec := os.Getenv("CHROMIUM")
	if exec == "" {
		exec = "/usr/bin/chromium"
	}
	if _, err := os.Stat(exec); err != nil {
		t.Fatalf("headless Chromium is needed (apt-get install chromium): %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exec), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		// no UserDataDir: chromedp makes a fresh profile directory and removes it
		// once the browser has exited (a t.TempDir raced its last writes)
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// run runs actions in the browser within 30 s; on failure it fails t with
// where the browser is and what the page shows.
func run(t *testing.T, ctx context.Context, actions ...chromedp.Action) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(tctx, actions...); err != nil {
		var loc, body string
		_ = chromedp.Run(ctx, chromedp.Location(&loc), chromedp.OuterHTML("body", &body, chromedp.ByQuery))
		t.Fatalf("browser: %v\nat %s\n%s", err, loc, body)
	}
}

// What the browser waits for and presses on auth's pages and the app's.
const (
	authorizeButton = `button[value=authorize]`
	signOutButton   = `//button[normalize-space(.)="Sign out"]`
	appCallbackPage = `#app-callback`
)

// signIn fills the login page.
func signIn(user, password string) chromedp.Tasks {
	return chromedp.Tasks{
		chromedp.WaitVisible(`#username`, chromedp.ByQuery),
		chromedp.SendKeys(`#username`, user, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, password, chromedp.ByQuery),
		chromedp.Click(`form button[type=submit]`, chromedp.ByQuery),
	}
}

// toConsent opens authURL, an app's authorization request, and signs user
// in: the browser is on the consent page.
func toConsent(authURL, user, password string) chromedp.Tasks {
	return chromedp.Tasks{chromedp.Navigate(authURL), signIn(user, password), consentPage()}
}

// consentPage waits for the consent page's Authorize button.
func consentPage() chromedp.Action { return chromedp.WaitVisible(authorizeButton, chromedp.ByQuery) }

// authorizeApp presses Authorize on the consent page and waits to be back in the app.
func authorizeApp() chromedp.Tasks {
	return chromedp.Tasks{chromedp.Click(authorizeButton, chromedp.ByQuery), backInTheApp()}
}

// backInTheApp waits for the app's redirect URI page.
func backInTheApp() chromedp.Action { return chromedp.WaitVisible(appCallbackPage, chromedp.ByQuery) }

// appsPage waits for auth's "Your authorized apps" page: the browser is signed in.
func appsPage() chromedp.Action {
	return chromedp.WaitVisible(`//h1[contains(., "Your authorized apps")]`, chromedp.BySearch)
}

// confirmSignOut presses Sign out on the sign-out page.
func confirmSignOut() chromedp.Tasks {
	return chromedp.Tasks{chromedp.WaitVisible(signOutButton, chromedp.BySearch), chromedp.Click(signOutButton, chromedp.BySearch)}
}

// signedOutPage waits for the "You are signed out" page.
func signedOutPage() chromedp.Action {
	return chromedp.WaitVisible(`//h1[contains(., "You are signed out")]`, chromedp.BySearch)
}

// signOut opens the sign-out page and presses its Sign out button.
func signOut(gw string) chromedp.Tasks {
	return chromedp.Tasks{chromedp.Navigate(gw + "/oauth/logout"), confirmSignOut(), signedOutPage()}
}

// signInToApps signs user in on the login page and lands on auth's apps page.
func signInToApps(gw, user, password string) chromedp.Tasks {
	return chromedp.Tasks{chromedp.Navigate(gw + "/oauth/login?next=/oauth/apps"), signIn(user, password), appsPage()}
}

// stillSignedIn opens auth's apps page, which shows only to a signed-in browser.
func stillSignedIn(gw string) chromedp.Tasks {
	return chromedp.Tasks{chromedp.Navigate(gw + "/oauth/apps"), appsPage()}
}

// nowSignedOut opens auth's apps page and finds the login page instead.
func nowSignedOut(gw string) chromedp.Tasks {
	return chromedp.Tasks{chromedp.Navigate(gw + "/oauth/apps"), chromedp.WaitVisible(`#username`, chromedp.ByQuery)}
}
