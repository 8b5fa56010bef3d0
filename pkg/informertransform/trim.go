package informertransform

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LastAppliedAnnotation is kubectl's copy of the last applied manifest, often the largest string a
// pod carries.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Trimmed is the audit of TrimPod: every pod field it drops (a JSON path; [] stands for every
// element of a list), each with why no reader of the descheduler's pod informer needs it. The
// readers are the descheduler's plugins, DefaultEvictor (its nodeFit included), the evictor's
// gates (soft-eviction marks, budgets, windows), the scheduler simulation (kube-scheduler's
// framework with its in-tree plugins and Accord's, and its cache's NodeInfo bookkeeping), and
// `accord-descheduler explain`. What they read, and so what TrimPod keeps:
//
//   - identity and ownership: metadata name, namespace, uid, labels, the annotations by key (the
//     evict / prefer-no-eviction / mirror / config-source annotations, the descheduler's own marks,
//     whose field manager VerifyMarks checked before managedFields went), ownerReferences,
//     creationTimestamp, deletionTimestamp (every plugin, DefaultEvictor, RemoveDuplicates, explain);
//   - placement: spec nodeName, nodeSelector, affinity, tolerations, topologySpreadConstraints,
//     schedulerName, priority and priorityClassName, preemptionPolicy, schedulingGates, hostNetwork,
//     resourceClaims, overhead, resources (pod-level) (the simulated scheduler's NodeAffinity,
//     TaintToleration, InterPodAffinity, PodTopologySpread, PrioritySort, DynamicResources,
//     NodeResourcesFit; the descheduler's node-affinity, taint, anti-affinity and spread plugins;
//     nodeFit);
//   - containers (init containers too): name, image (ImageLocality, RemoveDuplicates), ports
//     (NodePorts, the cache's used ports), resources, resizePolicy, restartPolicy and its rules
//     (NodeResourcesFit, BalancedAllocation, LowNodeUtilization and the other utilization plugins:
//     requests with sidecar semantics);
//   - volumes: their names and every source except the four below (VolumeBinding, VolumeRestrictions,
//     VolumeZone, NodeVolumeLimits, the cache's PVC counts: persistentVolumeClaim, ephemeral, csi and
//     the in-tree disk types; DefaultEvictor: emptyDir, hostPath, persistentVolumeClaim);
//   - status: phase, reason, message, qosClass, startTime, conditions' type, status, reason and
//     lastTransitionTime (resize conditions for NodeResourcesFit's requests, readiness), every
//     container status's name, ready, started, restartCount, image, state (whether it runs, the
//     waiting and terminated reasons, exit codes and times: RemovePodsHavingTooManyRestarts,
//     RemoveFailedPods, PodLifeTime), resources and allocatedResources (in-place resize: the requests the scheduler
//     counts), and hostIP.
//
// Nothing else is read; TestTrimmedFieldsAreTheAuditedOnes keeps this list and TrimPod equal, and
// the verdict tests (the descheduler's plugins and evictor in pkg/descheduler/framework/runtime,
// the simulation in pkg/descheduler/simulator) run over trimmed and untrimmed copies of varied
// pods and require the same decisions.
var Trimmed = []TrimmedField{
	{"metadata.annotations[" + LastAppliedAnnotation + "]", "annotations are read by key; no reader looks this one up"},
	{"spec.containers[].command", "the process: no placement or eviction rule depends on it"},
	{"spec.containers[].args", "the process"},
	{"spec.containers[].workingDir", "the process"},
	{"spec.containers[].env", "the process's environment"},
	{"spec.containers[].envFrom", "the process's environment"},
	{"spec.containers[].volumeMounts", "where volumes are mounted; the volume plugins and the evictor read spec.volumes"},
	{"spec.containers[].volumeDevices", "where block volumes appear; likewise"},
	{"spec.containers[].livenessProbe", "the kubelet's"},
	{"spec.containers[].readinessProbe", "the kubelet's"},
	{"spec.containers[].startupProbe", "the kubelet's"},
	{"spec.containers[].lifecycle", "the kubelet's hooks"},
	{"spec.containers[].terminationMessagePath", "the kubelet's"},
	{"spec.containers[].terminationMessagePolicy", "the kubelet's"},
	{"spec.containers[].securityContext", "the runtime's; no scheduler plugin admits by it"},
	{"spec.containers[].stdin", "the runtime's"},
	{"spec.containers[].stdinOnce", "the runtime's"},
	{"spec.containers[].tty", "the runtime's"},
	{"spec.initContainers[].command", "as for containers"},
	{"spec.initContainers[].args", "as for containers"},
	{"spec.initContainers[].workingDir", "as for containers"},
	{"spec.initContainers[].env", "as for containers"},
	{"spec.initContainers[].envFrom", "as for containers"},
	{"spec.initContainers[].volumeMounts", "as for containers"},
	{"spec.initContainers[].volumeDevices", "as for containers"},
	{"spec.initContainers[].livenessProbe", "as for containers"},
	{"spec.initContainers[].readinessProbe", "as for containers"},
	{"spec.initContainers[].startupProbe", "as for containers"},
	{"spec.initContainers[].lifecycle", "as for containers"},
	{"spec.initContainers[].terminationMessagePath", "as for containers"},
	{"spec.initContainers[].terminationMessagePolicy", "as for containers"},
	{"spec.initContainers[].securityContext", "as for containers"},
	{"spec.initContainers[].stdin", "as for containers"},
	{"spec.initContainers[].stdinOnce", "as for containers"},
	{"spec.initContainers[].tty", "as for containers"},
	{"spec.ephemeralContainers", "debugging containers request nothing the scheduler counts; PodLifeTime reads their statuses, which stay"},
	{"spec.volumes[].secret", "mounted from the apiserver: no node constraint, not local storage"},
	{"spec.volumes[].configMap", "likewise"},
	{"spec.volumes[].projected", "likewise (the service account token volume every pod has)"},
	{"spec.volumes[].downwardAPI", "likewise"},
	{"spec.imagePullSecrets", "the kubelet's"},
	{"spec.hostAliases", "the kubelet's"},
	{"spec.dnsConfig", "the kubelet's"},
	{"spec.readinessGates", "the endpoints controllers'"},
	{"spec.securityContext", "the runtime's"},
	{"status.podIP", "no reader"},
	{"status.podIPs", "no reader"},
	{"status.conditions[].message", "conditions are read by type, status and reason"},
	{"status.conditions[].lastProbeTime", "likewise"},
	{"status.containerStatuses[].containerID", "the runtime's handle"},
	{"status.containerStatuses[].imageID", "the image's digest; the image name stays"},
	{"status.containerStatuses[].lastState", "only the current state is read"},
	{"status.containerStatuses[].state.waiting.message", "the reason is read, not the message"},
	{"status.containerStatuses[].state.terminated.message", "the reason and exit code are read"},
	{"status.containerStatuses[].state.terminated.containerID", "the runtime's handle"},
	{"status.containerStatuses[].state.running.startedAt", "a running container is read as running (its state is not waiting or terminated); the age rules read the pod's creationTimestamp. Without it the statuses of a template's healthy replicas are equal, and shared"},
	{"status.containerStatuses[].volumeMounts", "as for spec.containers[].volumeMounts"},
	{"status.containerStatuses[].user", "the runtime's"},
	{"status.containerStatuses[].allocatedResourcesStatus", "device health, read by no rule"},
	{"status.initContainerStatuses[].containerID", "as for containerStatuses"},
	{"status.initContainerStatuses[].imageID", "as for containerStatuses"},
	{"status.initContainerStatuses[].lastState", "as for containerStatuses"},
	{"status.initContainerStatuses[].state.waiting.message", "as for containerStatuses"},
	{"status.initContainerStatuses[].state.terminated.message", "as for containerStatuses"},
	{"status.initContainerStatuses[].state.terminated.containerID", "as for containerStatuses"},
	{"status.initContainerStatuses[].state.running.startedAt", "as for containerStatuses"},
	{"status.initContainerStatuses[].volumeMounts", "as for containerStatuses"},
	{"status.initContainerStatuses[].user", "as for containerStatuses"},
	{"status.initContainerStatuses[].allocatedResourcesStatus", "as for containerStatuses"},
	{"status.ephemeralContainerStatuses[].containerID", "as for containerStatuses"},
	{"status.ephemeralContainerStatuses[].imageID", "as for containerStatuses"},
	{"status.ephemeralContainerStatuses[].lastState", "as for containerStatuses"},
	{"status.ephemeralContainerStatuses[].state.waiting.message", "as for containerStatuses"},
	{"status.ephemeralContainerStatuses[].state.terminated.message", "as for containerStatuses"},
	{"status.ephemeralContainerStatuses[].state.terminated.containerID", "as for containerStatuses"},
	{"status.ephemeralContainerStatuses[].state.running.startedAt", "as for containerStatuses"},
	{"status.ephemeralContainerStatuses[].volumeMounts", "as for containerStatuses"},
	{"status.ephemeralContainerStatuses[].user", "as for containerStatuses"},
	{"status.ephemeralContainerStatuses[].allocatedResourcesStatus", "as for containerStatuses"},
}

// TrimmedField is one entry of Trimmed.
type TrimmedField struct {
	Path string
	// Why no reader needs it.
	Why string
}

// TrimPod drops from a pod the fields of Trimmed, in place (the pod must be the informer's freshly
// decoded object, as in a transform). Only the descheduler's pod informer trims (NewTrimmingPodSharer).
func TrimPod(p *corev1.Pod) {
	delete(p.Annotations, LastAppliedAnnotation)
	spec := &p.Spec
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			trimContainer(&containers[i])
		}
	}
	spec.EphemeralContainers = nil
	for i := range spec.Volumes {
		v := &spec.Volumes[i].VolumeSource
		v.Secret, v.ConfigMap, v.Projected, v.DownwardAPI = nil, nil, nil, nil
	}
	spec.ImagePullSecrets, spec.HostAliases, spec.DNSConfig, spec.ReadinessGates, spec.SecurityContext = nil, nil, nil, nil, nil

	st := &p.Status
	st.PodIP, st.PodIPs = "", nil
	for i := range st.Conditions {
		st.Conditions[i].Message = ""
		st.Conditions[i].LastProbeTime = metav1.Time{}
	}
	for _, statuses := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range statuses {
			trimContainerStatus(&statuses[i])
		}
	}
}

func trimContainer(c *corev1.Container) {
	c.Command, c.Args, c.WorkingDir = nil, nil, ""
	c.Env, c.EnvFrom = nil, nil
	c.VolumeMounts, c.VolumeDevices = nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
	c.TerminationMessagePath, c.TerminationMessagePolicy = "", ""
	c.SecurityContext = nil
	c.Stdin, c.StdinOnce, c.TTY = false, false, false
}

func trimContainerStatus(s *corev1.ContainerStatus) {
	s.ContainerID, s.ImageID = "", ""
	s.LastTerminationState = corev1.ContainerState{}
	if w := s.State.Waiting; w != nil {
		w.Message = ""
	}
	if t := s.State.Terminated; t != nil {
		t.Message, t.ContainerID = "", ""
	}
	if r := s.State.Running; r != nil {
		r.StartedAt = metav1.Time{}
	}
	s.VolumeMounts, s.User, s.AllocatedResourcesStatus = nil, nil, nil
}
