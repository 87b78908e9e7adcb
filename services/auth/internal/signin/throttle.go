package signin

import (
	"context"
	"strings"
	"time"
)

// attempt is one sign-in attempt counted by a limit.
type attempt struct {
	f   Failures
	key string
}

// accountKey is the key sign-in attempts naming login (trimmed) count
// under: the identifier as typed, lowercased, never the account it names.
// Keyed by the account, failures under a username would answer a try under
// an email with 429 exactly when both are one account's; keyed by what is
// typed, the answers tell nothing of accounts (decision 0091). The username
// and the email of one account thus have a budget each.
func accountKey(login string) string {
	return "login:" + strings.ToLower(login)
}

// count counts a sign-in attempt for account (accountKey) from address
// before the password is checked, atomically, so parallel guesses cannot
// all pass. It returns what it counted (to refund when the attempt
// succeeds), the wait when a limit refuses it (then nothing stays counted),
// and whether a failure should be answered slowly.
func (s *Service) count(ctx context.Context, account, address string) (counted []attempt, wait time.Duration, slow bool, err error) {
	for _, a := range []attempt{{s.AccountAddressFailures, address + "|" + account}, {s.AddressFailures, address}} {
		w, remaining, err := a.f.Count(ctx, a.key)
		if err != nil || w > 0 {
			s.refund(ctx, counted)
			return nil, w, false, err
		}
		counted = append(counted, a)
		slow = slow || remaining < a.f.Limit()/2
	}
	// Per account from any address: an address the account signed in from
	// is spared (the two limits above still hold it), every other one
	// shares the account's budget.
	known, err := s.KnownAddresses.Has(ctx, account+"|"+address)
	if err != nil {
		s.refund(ctx, counted)
		return nil, 0, false, err
	}
	if known {
		return counted, 0, slow, nil
	}
	a := attempt{s.AccountFailures, account}
	w, remaining, err := a.f.Count(ctx, a.key)
	if err != nil || w > 0 {
		s.refund(ctx, counted)
		return nil, w, false, err
	}
	counted = append(counted, a)
	return counted, 0, slow || remaining < a.f.Limit()/2, nil
}

// refund gives back the attempts counted for a sign-in that was no wrong guess.
func (s *Service) refund(ctx context.Context, counted []attempt) {
	for _, a := range counted {
		if err := a.f.Refund(ctx, a.key); err != nil {
			s.Log.WarnContext(ctx, "refunding a sign-in attempt failed", "error", err.Error())
		}
	}
}
