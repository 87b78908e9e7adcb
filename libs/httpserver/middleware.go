package httpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
)

// LogClientIDKey is the gin context key under which authentication middleware
// leaves the caller's client id for the request log.
const LogClientIDKey = "httpserver.client_id"

// traceContext makes a span of every request (but the probes) when tracing
// is on. Off, it only takes up the caller's trace context: otelgin would
// still build a request's span attributes to hand them to a tracer that
// drops them, a visible share of a small read's CPU.
func (s *Server) traceContext() gin.HandlerFunc {
	if s.cfg.Tracing {
		return otelgin.Middleware(s.service, otelgin.WithGinFilter(func(c *gin.Context) bool {
			return !isProbe(c.Request.URL.Path)
		}))
	}
	return func(c *gin.Context) {
		// Read at each request, as otelgin does: the propagator is global.
		ctx := c.Request.Context()
		if tc := otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(c.Request.Header)); tc != ctx {
			c.Request = c.Request.WithContext(tc)
		}
		c.Next()
	}
}

// isProbe tells the ops listener's probe and metrics paths, which are
// neither traced, logged nor counted.
func isProbe(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

// recoverer turns a panic into a 500 in the API's shape; the cause goes to the
// log with the hash the client sees, never to the client.
func (s *Server) recoverer() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				hash := apierror.NewHash()
				s.log.ErrorContext(c.Request.Context(), "panic serving request", "hash", hash,
					"route", c.FullPath(), "panic", fmt.Sprint(r))
				if !c.Writer.Written() {
					apireply.Abort(c, apierror.Internal(hash))
				} else {
					c.Abort()
				}
			}
		}()
		c.Next()
	}
}

// requestLog writes one JSON line per request: method, route template, status,
// duration, the client's address (the peer, or what a trusted proxy says) and
// client id. Never the query string, headers or body.
func requestLog(log *slog.Logger, listener string) gin.HandlerFunc {
	return afterServing(func(c *gin.Context, route string, took time.Duration) {
		attrs := []any{
			"listener", listener,
			"method", c.Request.Method,
			"route", route,
			"status", c.Writer.Status(),
			"duration_ms", float64(took.Microseconds()) / 1000,
			"client_ip", c.ClientIP(),
		}
		if id := c.GetString(LogClientIDKey); id != "" {
			attrs = append(attrs, "client_id", id)
		}
		level := slog.LevelInfo
		if c.Writer.Status() >= 500 {
			level = slog.LevelError
		}
		log.Log(c.Request.Context(), level, "request", attrs...)
	})
}

// afterServing runs the rest of the chain, then record with the request's
// route template ("unmatched" for none: never the raw path, whose values
// are unbounded) and the time serving took; probes are not recorded.
func afterServing(record func(c *gin.Context, route string, took time.Duration)) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		if isProbe(c.Request.URL.Path) {
			return
		}
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		record(c, route, time.Since(start))
	}
}

// bodyLimit refuses bodies larger than limit with 413, before reading them
// when Content-Length says so and while reading them otherwise.
func bodyLimit(limit int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > limit {
			apireply.Abort(c, apierror.BodyTooLarge(limit))
			return
		}
		if c.Request.Body != nil {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
		}
		c.Next()
	}
}

// requestDeadline gives each request's context the deadline d, but on the
// routes exempt returns true for (by route template).
func requestDeadline(d time.Duration, exempt func(route string) bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		if exempt(c.FullPath()) {
			c.Next()
			return
		}
		ctx, cancel := context.WithTimeout(c.Request.Context(), d)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

// IsBodyTooLarge reports whether err came from reading past the body limit.
func IsBodyTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

type redMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newREDMetrics(reg prometheus.Registerer) *redMetrics {
	m := &redMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_server_requests_total",
			Help: "HTTP requests served, by listener, route template, method and status class.",
		}, []string{"listener", "route", "method", "status_class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_server_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by listener, route template and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"listener", "route", "method"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

func (m *redMetrics) middleware(listener string) gin.HandlerFunc {
	return afterServing(func(c *gin.Context, route string, took time.Duration) {
		method := c.Request.Method
		switch method {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead, http.MethodOptions:
		default:
			method = "other"
		}
		class := fmt.Sprintf("%dxx", c.Writer.Status()/100)
		m.requests.WithLabelValues(listener, route, method, class).Inc()
		m.duration.WithLabelValues(listener, route, method).Observe(took.Seconds())
	})
}
