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
The pods of this release (services, migrations, tests); with a component or
the helm-test label, the only peers allowed on the internal port.
*/}}
{{- define "eventreg.ownPods" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: eventreg
{{- end -}}

{{/*
AUTH_ISSUER: config.issuer, else https:// and the enabled Ingress's host, else
the first hostname of the enabled HTTPRoute (httpRoute is read with dig: it may
be absent); none of them is a failed render, never a made-up issuer.
*/}}
{{- define "eventreg.issuer" -}}
{{- $ingress := .Values.ingress | default dict -}}
{{- $route := .Values.httpRoute | default dict -}}
{{- $routeHosts := list -}}
{{- if kindIs "map" $route -}}
{{- $routeHosts = dig "hostnames" (list) $route | default (compact (list (dig "hostname" "" $route))) -}}
{{- end -}}
{{- if .Values.config.issuer -}}
{{- .Values.config.issuer -}}
{{- else if and (dig "enabled" false $ingress) (dig "host" "" $ingress) -}}
{{- printf "https://%s" (dig "host" "" $ingress) -}}
{{- else if and (kindIs "map" $route) (dig "enabled" false $route) $routeHosts -}}
{{- printf "https://%s" (first $routeHosts) -}}
{{- else -}}
{{- fail "config.issuer is required: set it to the URL apps use to reach the API (https://api.example.com), or enable the Ingress (ingress.host) or the HTTPRoute (httpRoute.hostnames) to derive it" -}}
{{- end -}}
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

{{/*
A service's image: <registry>/<repository>@<digest> when a digest is set (the tag
is then ignored), else <registry>/<repository>:<tag>. The default repository,
eventreg-<service>, is what the release workflow pushes.
*/}}
{{- define "eventreg.image" -}}
{{- $img := .svc.image -}}
{{- $repo := printf "%s/%s" $img.registry (default (printf "eventreg-%s" .name) $img.repository) -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default .root.Chart.AppVersion $img.tag) -}}
{{- end -}}
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
{{- $extraEnv := .svc.extraEnv | default list -}}
{{- $extraNames := dict -}}
{{- range $extraEnv }}{{ $_ := set $extraNames .name true }}{{ end -}}
{{- $replaced := deepCopy $extraNames -}}
{{- range $k, $_ := $extra }}{{ $_ := set $replaced $k true }}{{ end -}}
{{- $out := list -}}
{{- range include "eventreg.derivedEnv" . | fromYamlArray -}}
{{- if not (hasKey $replaced .name) -}}
{{- $out = append $out . -}}
{{- end -}}
{{- end -}}
{{- range $k, $v := $extra -}}
{{- if not (hasKey $extraNames $k) -}}
{{- $out = append $out (dict "name" $k "value" (include "eventreg.scalar" $v)) -}}
{{- end -}}
{{- end -}}
{{- range $extraEnv -}}
{{- $e := deepCopy . -}}
{{- if hasKey $e "value" -}}
{{- $_ := set $e "value" (include "eventreg.scalar" $e.value) -}}
{{- end -}}
{{- $out = append $out $e -}}
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
- name: OPS_ADDR
  value: ":9091"
{{ include "eventreg.secretEnv" (dict "root" $root "env" "INTERNAL_AUTH_KEY" "key" $keys.internalAuthKey) }}
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
{{- if $root.Values.config.redisCluster }}
- name: REDIS_CLUSTER
  value: "true"
{{- end }}
{{- end }}
{{- else if eq $name "auth" }}
{{- fail "services.auth.redis must be true: the auth service keeps codes, refresh tokens and sessions in Redis" }}
{{- end }}
- name: LOG_LEVEL
  value: {{ $root.Values.config.logLevel | quote }}
- name: TRUSTED_PROXIES
  value: {{ include "eventreg.trustedProxies" $root | quote }}
- name: AUTH_ISSUER
  value: {{ include "eventreg.issuer" $root | quote }}
- name: TOKEN_AUDIENCE
  value: {{ $root.Values.config.tokenAudience | quote }}
{{- if eq $name "auth" }}
{{ include "eventreg.secretEnv" (dict "root" $root "env" "KEY_ENCRYPTION_KEY" "key" $keys.keyEncryptionKey) }}
{{ include "eventreg.secretEnv" (dict "root" $root "env" "CLIENT_SECRET_KEY" "key" $keys.clientSecretKey) }}
- name: ACCESS_TOKEN_TTL
  value: {{ $root.Values.config.accessTokenTTL | quote }}
- name: WEBHOOK_ALLOWED_NETWORKS
  value: {{ $root.Values.config.webhookAllowedNetworks | quote }}
{{- else }}
# the outbox relay hands events to auth; users also reports shrunk permissions there
- name: AUTH_INTERNAL_URL
  value: {{ printf "http://%s-auth:9090" $full | quote }}
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
- name: VOLUNTEERS_PUBLIC_URL
  value: {{ printf "http://%s-volunteers:8080" $full | quote }}
- name: REGISTRATIONS_PUBLIC_URL
  value: {{ printf "http://%s-registrations:8080" $full | quote }}
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
{{- /* No GOMAXPROCS: Go's default follows the container's CPU limit. */}}
{{- $memory := dig "limits" "memory" "" (.svc.resources | default dict) }}
{{- if not $memory }}
{{- fail (printf "services.%s.resources.limits.memory is required: GOMEMLIMIT is 90%% of it" $name) }}
{{- end }}
- name: GOMEMLIMIT
  value: {{ include "eventreg.goMemLimit" (dict "name" $name "memory" $memory) | quote }}
{{- end -}}

{{/*
A scalar value as written in the values: YAML numbers reach templates as
float64, which toString and {{ }} print with an exponent (2097152 becomes
2.097152e+06, which no service parses); whole numbers are printed in full.
*/}}
{{- define "eventreg.scalar" -}}
{{- if and (kindIs "float64" .) (eq (floor .) .) -}}
{{- printf "%.0f" . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/*
A map of strings (labels, annotations) from values that may hold numbers or
booleans: every value quoted, numbers as written.
*/}}
{{- define "eventreg.stringMap" -}}
{{- $out := dict -}}
{{- range $k, $v := . }}{{ $_ := set $out $k (include "eventreg.scalar" $v) }}{{ end -}}
{{- if $out }}{{ toYaml $out }}{{ end -}}
{{- end -}}

{{/*
GOMEMLIMIT in bytes: 90% of the container's memory limit (a quantity such as
256Mi, 1Gi, 512M or plain bytes), leaving room for memory the Go heap does not
count. Call with (dict "name" "auth" "memory" $limit).
*/}}
{{- define "eventreg.goMemLimit" -}}
{{- $m := .memory -}}
{{- $bytes := 0.0 -}}
{{- if or (kindIs "float64" $m) (kindIs "int64" $m) (kindIs "int" $m) -}}
{{- $bytes = float64 $m -}}
{{- else -}}
{{- $s := toString $m | trim -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $s -}}
{{- $unit := trimPrefix $num $s -}}
{{- $units := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 -}}
{{- if or (not $num) (not (hasKey $units $unit)) -}}
{{- fail (printf "services.%s.resources.limits.memory %q: want a number of bytes or a quantity with k, M, G, T, Ki, Mi, Gi or Ti" .name $s) -}}
{{- end -}}
{{- $bytes = mulf (float64 $num) (index $units $unit) -}}
{{- end -}}
{{- printf "%.0f" (floor (mulf $bytes 0.9)) -}}
{{- end -}}

{{/*
Labels of a service's pods (Deployment and migration Job): the chart's, then
podLabels, which may add labels but not replace the chart's (the selectors and
NetworkPolicies depend on them). Call with (dict "root" $ "component" "auth" "svc" $svc).
*/}}
{{- define "eventreg.podLabels" -}}
{{- $own := printf "%s\n%s" (include "eventreg.labels" .) (include "eventreg.dataClientLabels" .) | fromYaml -}}
{{- range $k, $_ := .svc.podLabels | default dict -}}
{{- if hasKey $own $k -}}
{{- fail (printf "podLabels.%s: the chart sets this label itself" $k) -}}
{{- end -}}
{{- end -}}
{{- include "eventreg.labels" . }}
{{ include "eventreg.dataClientLabels" . }}
{{- with .svc.podLabels }}
{{ include "eventreg.stringMap" . }}
{{- end }}
{{- end -}}

{{/*
The ServiceAccount a service's pods run as: serviceAccount.name, else
<release>-<service> when the chart creates it, else the namespace's default.
Call with (dict "root" $ "name" "auth" "svc" $svc).
*/}}
{{- define "eventreg.serviceAccountName" -}}
{{- $sa := .svc.serviceAccount | default dict -}}
{{- if $sa.create -}}
{{- default (printf "%s-%s" (include "eventreg.fullname" .root) .name) $sa.name -}}
{{- else -}}
{{- default "default" $sa.name -}}
{{- end -}}
{{- end -}}

{{/*
affinity of a service's pods: the values' affinity, plus, unless it sets its own
podAntiAffinity or podAntiAffinity is "none", a preference to put the service's
replicas on different nodes. Call with (dict "root" $ "name" "auth" "svc" $svc).
*/}}
{{- define "eventreg.affinity" -}}
{{- $aff := deepCopy (.svc.affinity | default dict) -}}
{{- if and (eq (.svc.podAntiAffinity | default "none") "soft") (not (hasKey $aff "podAntiAffinity")) -}}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (include "eventreg.selectorLabels" (dict "root" .root "component" .name) | fromYaml)) -}}
{{- $_ := set $aff "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term))) -}}
{{- end -}}
{{- if $aff }}{{ toYaml $aff }}{{ end -}}
{{- end -}}

{{/*
topologySpreadConstraints of a service's pods; a constraint without a
labelSelector spreads the service's own pods. Call as eventreg.affinity.
*/}}
{{- define "eventreg.topologySpreadConstraints" -}}
{{- $out := list -}}
{{- range .svc.topologySpreadConstraints | default list -}}
{{- $c := deepCopy . -}}
{{- if not (hasKey $c "labelSelector") -}}
{{- $_ := set $c "labelSelector" (dict "matchLabels" (include "eventreg.selectorLabels" (dict "root" $.root "component" $.name) | fromYaml)) -}}
{{- end -}}
{{- $out = append $out $c -}}
{{- end -}}
{{- if $out }}{{ toYaml $out }}{{ end -}}
{{- end -}}

{{/*
initContainers of a service's pods: the sidecars first, as native sidecars
(restartPolicy: Always, so a migration Job still completes and init containers
can use, say, a database proxy), then the values' initContainers.
*/}}
{{- define "eventreg.initContainers" -}}
{{- $out := list -}}
{{- range .svc.sidecars | default list -}}
{{- $out = append $out (set (deepCopy .) "restartPolicy" "Always") -}}
{{- end -}}
{{- $out = concat $out (.svc.initContainers | default list) -}}
{{- if $out }}{{ toYaml $out }}{{ end -}}
{{- end -}}

{{/*
TRUSTED_PROXIES: exactly the gateway's pods, which the operator names; never a
default of whole private ranges, which lets any pod (or any client inside those
ranges) choose its own address for the login limits (decision 0091).
*/}}
{{- define "eventreg.trustedProxies" -}}
{{- if not .Values.config.trustedProxies -}}
{{- fail "config.trustedProxies is required: the addresses (CIDRs) of your ingress controller's or Gateway's pods, whose X-Forwarded-For names the client (docs/deployment.md, \"Client addresses\")" -}}
{{- end -}}
{{- .Values.config.trustedProxies -}}
{{- end }}
