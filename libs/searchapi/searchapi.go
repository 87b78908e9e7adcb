// Package searchapi serves the search endpoints of the services that keep
// records of users (volunteers, registrations, dealers): the body
// (libs/jsonbody), the filter.userIds that may narrow it (page.UsersRequest),
// the cursor bound to that filter, and one page of records joined to their
// users (libs/usersummary) rendered as {data, nextPage, hasMore}.
package searchapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/jsonbody"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/libs/usersummary"
)

// Records serves a search that takes no filter: search gets the page the
// body's cursor and limit ask for, and its records are rendered by render.
func Records[T, J any](c *gin.Context, pager page.Paginator, reply apireply.Replier,
	search func(context.Context, keyset.Seek) (usersummary.Page[T], error), render func(T) J) {
	var req page.Request
	limit, ok := jsonbody.DecodeSearch(c, &req)
	if !ok {
		return
	}
	serve(c, pager, reply, req, limit, nil, search, render)
}

// RecordsOfUsers serves a search that filter.userIds may narrow: search gets
// the ids (nil for every user) and the page; the cursor is bound to the ids.
func RecordsOfUsers[T, J any](c *gin.Context, pager page.Paginator, reply apireply.Replier,
	search func(context.Context, []int64, keyset.Seek) (usersummary.Page[T], error), render func(T) J) {
	var req page.UsersRequest
	limit, ok := jsonbody.DecodeSearch(c, &req)
	if !ok {
		return
	}
	ids, e := req.UserIDs()
	if e != nil {
		apireply.Abort(c, e)
		return
	}
	serve(c, pager, reply, req.Request, limit, page.UsersFilter(ids), func(ctx context.Context, ks keyset.Seek) (usersummary.Page[T], error) {
		return search(ctx, ids, ks)
	}, render)
}

// serve starts at the body's cursor, which must have been issued for filter,
// runs search and renders its page.
func serve[T, J any](c *gin.Context, pager page.Paginator, reply apireply.Replier, req page.Request, limit int, filter any,
	search func(context.Context, keyset.Seek) (usersummary.Page[T], error), render func(T) J) {
	ks, e := pager.Start(req.NextPage, limit, filter)
	if e != nil {
		apireply.Abort(c, e)
		return
	}
	p, err := search(c.Request.Context(), ks)
	if err != nil {
		reply.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, page.Render(pager, p.Items, p.Last, p.More, filter, render))
}
