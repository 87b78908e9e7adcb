package service

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/outbox"
)

// AuthEvents is the configuration of a service whose outbox relay hands its
// events to auth (volunteers, registrations, users); embed it. Empty: the relay
// does not run and the events wait in the outbox.
type AuthEvents struct {
	AuthInternalURL string `env:"AUTH_INTERNAL_URL"`
}

// Validate checks what the types cannot.
func (a *AuthEvents) Validate() error {
	if a.AuthInternalURL == "" {
		return nil
	}
	if u, err := url.Parse(a.AuthInternalURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("AUTH_INTERNAL_URL must be a URL such as http://auth:9090")
	}
	return nil
}

// PublishTimeout bounds one hand-over of a batch of events to auth.
const PublishTimeout = 10 * time.Second

// StartRelay starts the outbox relay of rt's database (libs/outbox) until
// ctx ends, publishing to auth's internal listener at authURL, and makes
// rt wait for it before closing the pool. With authURL empty it logs once
// that events wait in the outbox and starts nothing.
func StartRelay(ctx context.Context, rt *Runtime, authURL string, render outbox.RenderFunc) error {
	return StartRelayWith(ctx, rt, authURL, render, nil)
}

// StartRelayWith is StartRelay with the hand-over to auth wrapped by wrap
// (nil: none): users tells auth of its permission notices this way, in the
// order of the outbox (decision 0090).
func StartRelayWith(ctx context.Context, rt *Runtime, authURL string, render outbox.RenderFunc,
	wrap func(outbox.PublishFunc) outbox.PublishFunc) error {
	if authURL == "" {
		rt.Log.Warn("AUTH_INTERNAL_URL is not set: the outbox relay does not run; events wait in the outbox until a replica with it set relays them")
		return nil
	}
	publish := outbox.PublishTo(authapi.NewClient(authURL, PublishTimeout, rt.Credentials))
	if wrap != nil {
		publish = wrap(publish)
	}
	relay, err := outbox.NewRelay(outbox.Config{Pool: rt.Pool, Source: rt.Name, Render: render,
		Publish: publish, Log: rt.Log, Metrics: rt.Server.Metrics})
	if err != nil {
		return err
	}
	rt.OnClose(relay.Start(ctx))
	return nil
}
