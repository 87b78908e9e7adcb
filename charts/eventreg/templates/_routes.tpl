{{/*
The gateway's route table, as the Ingress and the HTTPRoute render it (the
nginx template, deploy/nginx/nginx.conf.tmpl, carries the same table; both
are checked against libs/apispec/endpoints.json by deploy/deploytest).
Every service owns whole path prefixes, so only Exact and Prefix matches,
which every Ingress controller and Gateway API implementation reads alike:
/api/v0/users/{id}/volunteer and .../registration reach users with the rest of
/api/v0/users, and users forwards them to their owners (docs/decisions/0085).
A trailing "/" of a Prefix path is ignored by both APIs (element-wise match).
*/}}
{{- define "eventreg.routes" -}}
- {path: "/", match: Exact, service: users}
- {path: "/api/docs", match: Exact, service: users}
- {path: "/oauth/", match: Prefix, service: auth}
- {path: "/api/oauth/", match: Prefix, service: auth}
- {path: "/.well-known/", match: Prefix, service: auth}
- {path: "/api/v0/webhooks", match: Prefix, service: auth}
- {path: "/api/webhooks/", match: Prefix, service: auth}
- {path: "/api/users/", match: Prefix, service: users}
- {path: "/api/v0/users", match: Prefix, service: users}
- {path: "/api/v0/roles", match: Prefix, service: users}
- {path: "/api/v0/volunteers/", match: Prefix, service: volunteers}
- {path: "/api/v0/registration/", match: Prefix, service: registrations}
- {path: "/api/v0/dealers/", match: Prefix, service: dealers}
- {path: "/api/config", match: Exact, service: registrations}
{{- end -}}
