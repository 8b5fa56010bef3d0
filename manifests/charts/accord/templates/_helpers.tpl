{{/* Name prefix of every object: "accord" when the release name contains it, else <release>-accord. */}}
{{- define "accord.fullname" -}}
{{- if contains "accord" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-accord" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "accord.scheduler.name" -}}{{ include "accord.fullname" . }}-scheduler{{- end -}}
{{- define "accord.descheduler.name" -}}{{ include "accord.fullname" . }}-descheduler{{- end -}}
{{- define "accord.metricsReporter.name" -}}{{ include "accord.fullname" . }}-metrics-reporter{{- end -}}
{{- define "accord.console.name" -}}{{ include "accord.fullname" . }}-console{{- end -}}

{{- define "accord.labels" -}}
app.kubernetes.io/part-of: accord
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* image renders the image of a component: (dict "root" $ "name" "accord-scheduler"). */}}
{{- define "accord.image" -}}
{{- $tag := .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- if .root.Values.image.repository -}}
{{- printf "%s/%s:%s" (trimSuffix "/" .root.Values.image.repository) .name $tag -}}
{{- else -}}
{{- printf "%s:%s" .name $tag -}}
{{- end -}}
{{- end -}}

{{/* The checks JSON Schema cannot express: lowThresholds against usageThresholds. */}}
{{- define "accord.check" -}}
{{- $high := .Values.constraints.loadAware.usageThresholds -}}
{{- $low := .Values.descheduler.lowNodeLoad.lowThresholds -}}
{{- if and .Values.descheduler.enabled .Values.descheduler.lowNodeLoad.enabled -}}
{{- range $r, $v := $high -}}
{{- if not (hasKey $low $r) -}}
{{- fail (printf "descheduler.lowNodeLoad.lowThresholds.%s: Required value: name the same resources as constraints.loadAware.usageThresholds" $r) -}}
{{- else if gt (int (get $low $r)) (int $v) -}}
{{- fail (printf "descheduler.lowNodeLoad.lowThresholds.%s: Invalid value: %v: must not be above constraints.loadAware.usageThresholds.%s (%v)" $r (get $low $r) $r $v) -}}
{{- end -}}
{{- end -}}
{{- range $r, $v := $low -}}
{{- if not (hasKey $high $r) -}}
{{- fail (printf "descheduler.lowNodeLoad.lowThresholds.%s: Invalid value: constraints.loadAware.usageThresholds has no %s" $r $r) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The pod placement and pull secrets of a component's values. */}}
{{- define "accord.podPlacement" -}}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end -}}
