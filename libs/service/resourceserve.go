package service

import "errors"

// ResourceServe is the serve configuration of a resource service that keeps
// records of users and reads their summaries from the users service
// (volunteers, registrations, dealers): its config.Serve.
type ResourceServe struct {
	Base
	Resource
	UsersClient
	// AuthEvents is where the outbox relay hands the service's events.
	AuthEvents
}

// Validate checks what the types cannot.
func (s *ResourceServe) Validate() error {
	return errors.Join(s.Resource.Validate(), s.UsersClient.Validate(), s.AuthEvents.Validate())
}
