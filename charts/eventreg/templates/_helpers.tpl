{{/*
Prefix of every object name: the release name unless fullnameOverride is set.
*/}}
{{- define "eventreg.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels of one component. Call with (dict "root" $ "component" "auth").
*/}}
{{- define "eventreg.labels" -}}
{{ include "eventreg.selectorLabels" . }}
app.kubernetes.io/part-of: eventreg
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "eventreg.selectorLabels" -}}
app.kubernetes.io/name: eventreg
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
The pods of this release (services, migrations, tests): the only peers allowed on
the internal port.
*/}}
{{- define "eventreg.ownPods" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: eventreg
{{- end -}}

{{- define "eventreg.issuer" -}}
{{- default (printf "https://%s" .Values.ingress.host) .Values.config.issuer -}}
{{- end -}}

{{/*
One service's settings: serviceDefaults deep-merged with services.<name>.
Call with (dict "root" $ "name" "auth"); returns YAML (use fromYaml).
*/}}
{{- define "eventreg.serviceSettings" -}}
{{- $override := index .root.Values.services .name | default dict -}}
{{- include "eventreg.deepMerge" (dict "base" .root.Values.serviceDefaults "over" $override) -}}
{{- end -}}

{{/*
Deep merge of two maps, "over" winning; unlike sprig's mergeOverwrite it lets
false, 0 and "" override a default.
*/}}
{{- define "eventreg.deepMerge" -}}
{{- $out := deepCopy .base -}}
{{- range $k, $v := .over -}}
{{- $cur := index $out $k -}}
{{- if and (kindIs "map" $v) (kindIs "map" $cur) -}}
{{- $_ := set $out $k (include "eventreg.deepMerge" (dict "base" $cur "over" $v) | fromYaml) -}}
{{- else -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{- define "eventreg.image" -}}
{{- $img := .svc.image -}}
{{- printf "%s/%s:%s" $img.registry (default .name $img.repository) (default .root.Chart.AppVersion $img.tag) -}}
{{- end -}}

{{/*
Pod labels that open the bundled data stores' NetworkPolicies to a pod.
Call with (dict "root" $ "svc" $svc).
*/}}
{{- define "eventreg.dataClientLabels" -}}
eventreg.io/postgres-client: "true"
{{- if .svc.redis }}
eventreg.io/redis-client: "true"
{{- end }}
{{- end -}}

{{- define "eventreg.secretEnv" -}}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ .root.Values.secrets.existingSecret }}
      key: {{ .key }}
{{- end -}}

{{/*
The environment of one service and its migration Job (docs/configuration.md):
what the chart derives, then the service's `env`, which replaces a derived
variable of the same name. Call with (dict "root" $ "name" "auth" "svc" $svc).
*/}}
{{- define "eventreg.env" -}}
{{- $extra := .svc.env | default dict -}}
{{- $out := list -}}
{{- range include "eventreg.derivedEnv" . | fromYamlArray -}}
{{- if not (hasKey $extra .name) -}}
{{- $out = append $out . -}}
{{- end -}}
{{- end -}}
{{- range $k, $v := $extra -}}
{{- $out = append $out (dict "name" $k "value" (toString $v)) -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{- define "eventreg.derivedEnv" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $full := include "eventreg.fullname" $root -}}
{{- $keys := $root.Values.secrets.keys -}}
- name: PUBLIC_ADDR
  value: ":8080"
- name: INTERNAL_ADDR
  value: ":9090"
{{- if $root.Values.bundledPostgresql.enabled }}
{{ include "eventreg.secretEnv" (dict "root" $root "env" "EVENTREG_POSTGRES_PASSWORD" "key" $keys.postgresPassword) }}
- name: DATABASE_URL
  value: {{ printf "postgres://postgres:$(EVENTREG_POSTGRES_PASSWORD)@%s-postgresql:5432/%s?sslmode=disable" $full $name | quote }}
{{- else }}
{{ include "eventreg.secretEnv" (dict "root" $root "env" "DATABASE_URL" "key" (index $keys (printf "%sDatabaseUrl" $name))) }}
{{- end }}
{{- if .svc.redis }}
{{- if $root.Values.bundledRedis.enabled }}
- name: REDIS_URL
  value: {{ printf "redis://%s-redis:6379/0" $full | quote }}
{{- else }}
{{ include "eventreg.secretEnv" (dict "root" $root "env" "REDIS_URL" "key" $keys.redisUrl) }}
{{- end }}
{{- else if eq $name "auth" }}
{{- fail "services.auth.redis must be true: the auth service keeps codes, refresh tokens and sessions in Redis" }}
{{- end }}
- name: LOG_LEVEL
  value: {{ $root.Values.config.logLevel | quote }}
- name: TRUSTED_PROXIES
  value: {{ $root.Values.config.trustedProxies | quote }}
- name: AUTH_ISSUER
  value: {{ include "eventreg.issuer" $root | quote }}
- name: TOKEN_AUDIENCE
  value: {{ $root.Values.config.tokenAudience | quote }}
{{- if eq $name "auth" }}
{{ include "eventreg.secretEnv" (dict "root" $root "env" "KEY_ENCRYPTION_KEY" "key" $keys.keyEncryptionKey) }}
{{ include "eventreg.secretEnv" (dict "root" $root "env" "CLIENT_SECRET_KEY" "key" $keys.clientSecretKey) }}
- name: ACCESS_TOKEN_TTL
  value: {{ $root.Values.config.accessTokenTTL | quote }}
{{- else }}
- name: AUTH_JWKS_URL
  value: {{ printf "http://%s-auth:9090/.well-known/jwks.json" $full | quote }}
- name: TOKEN_LEEWAY
  value: {{ $root.Values.config.tokenLeeway | quote }}
{{ include "eventreg.secretEnv" (dict "root" $root "env" "CURSOR_KEY" "key" $keys.cursorKey) }}
- name: CONVENTION_ID
  value: {{ $root.Values.config.conventionId | quote }}
{{- end }}
{{- if eq $name "users" }}
- name: VOLUNTEERS_INTERNAL_URL
  value: {{ printf "http://%s-volunteers:9090" $full | quote }}
- name: AUTH_INTERNAL_URL
  value: {{ printf "http://%s-auth:9090" $full | quote }}
{{- else }}
- name: USERS_INTERNAL_URL
  value: {{ printf "http://%s-users:9090" $full | quote }}
{{- end }}
{{- with $root.Values.telemetry.otlpEndpoint }}
- name: OTEL_TRACES_EXPORTER
  value: otlp
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $root.Values.telemetry.otlpProtocol | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ $name | quote }}
{{- end }}
{{- if not (and .svc.resources.limits.cpu .svc.resources.limits.memory) }}
{{- fail (printf "services.%s.resources.limits needs cpu and memory: GOMAXPROCS and GOMEMLIMIT are taken from them" $name) }}
{{- end }}
- name: GOMAXPROCS
  valueFrom:
    resourceFieldRef:
      containerName: {{ $name }}
      resource: limits.cpu
- name: GOMEMLIMIT
  valueFrom:
    resourceFieldRef:
      containerName: {{ $name }}
      resource: limits.memory
{{- end -}}
