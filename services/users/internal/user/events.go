package user

import (
	"strconv"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
)

// resource names a user in its events.
func resource(id int64) string { return "user:" + strconv.FormatInt(id, 10) }

// UpdatedEvent is the event of a user whose service view (GET
// /api/v0/users/{id}) or role membership changed, u the user as read once
// changed. Every write path that creates a user, changes a field the
// service view shows, or gives or takes a role writes it in its transaction
// (one per user and transaction); a change only to what the view does not
// show (password, date of birth, newsletter, identity verification,
// picture) writes none.
func UpdatedEvent(u User) outbox.Event {
	return outbox.Event{Type: authapi.EventUserUpdated, Resource: resource(u.ID), Payload: u}
}

// Reasons a SignedOutEvent gives.
const (
	SignOutPasswordChanged = "password-changed"
	SignOutOperator        = "operator"
)

// SignedOutEvent asks auth to sign user id out everywhere: every browser
// session, every authorization of every app and its access tokens (not a
// webhook event, authapi.EventUserSignedOut). Written in the transaction
// that changes or removes a password, and by `users sign-out`; the outbox
// carries it to auth even when auth is down at the time.
func SignedOutEvent(id int64, reason string) outbox.Event {
	return outbox.Event{Type: authapi.EventUserSignedOut, Resource: resource(id), Payload: authapi.SignOut{UserID: id, Reason: reason}}
}
