{{/* Names and labels shared by every object of the release. */}}
{{- define "harness.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "harness.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "harness.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "harness.secretName" -}}
{{- default (printf "%s-env" (include "harness.fullname" .)) .Values.existingSecret -}}
{{- end -}}

{{- define "harness.claimName" -}}
{{- default (printf "%s-data" (include "harness.fullname" .)) .Values.persistence.existingClaim -}}
{{- end -}}

{{- define "harness.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
The pod spec every process shares: one image, the env from the ConfigMap and the Secret, the
shared volume at /data. Called with (dict "root" $ "component" "worker" "args" (list ...)
"spec" .Values.worker "sandboxed" true) and the probes in "probes" (YAML text).
*/}}
{{- define "harness.podSpec" -}}
{{- $root := .root -}}
{{- $bwrap := and .sandboxed $root.Values.sandbox.bubblewrap -}}
automountServiceAccountToken: false
terminationGracePeriodSeconds: {{ .spec.terminationGracePeriodSeconds }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $bwrap }}
hostUsers: false
{{- end }}
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
  seccompProfile:
    type: {{ if $bwrap }}Unconfined{{ else }}RuntimeDefault{{ end }}
  {{- if $bwrap }}
  appArmorProfile:
    type: Unconfined
  {{- end }}
containers:
  - name: {{ .component }}
    image: {{ include "harness.image" $root }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    args:
      {{- toYaml .args | nindent 6 }}
    envFrom:
      - configMapRef:
          name: {{ include "harness.fullname" $root }}-env
      - secretRef:
          name: {{ include "harness.secretName" $root }}
    securityContext:
      {{- toYaml $root.Values.containerSecurityContext | nindent 6 }}
      {{- if $bwrap }}
      procMount: Unmasked
      {{- end }}
    {{- with .ports }}
    ports:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- .probes | nindent 4 }}
    {{- with .spec.resources }}
    resources:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    volumeMounts:
      - name: data
        mountPath: {{ $root.Values.persistence.mountPath }}
volumes:
  - name: data
    persistentVolumeClaim:
      claimName: {{ include "harness.claimName" $root }}
{{- end -}}

{{/* An exec probe: `harness health --process <name>` exits 0 when that process is healthy. */}}
{{- define "harness.execProbes" -}}
livenessProbe:
  exec:
    command: ["harness", "health", "--process", {{ . | quote }}]
  initialDelaySeconds: 30
  periodSeconds: 20
  timeoutSeconds: 10
  failureThreshold: 3
{{- end -}}
