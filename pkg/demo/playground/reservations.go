package playground

import (
	"bytes"
	"errors"

	"github.com/accord-sched/accord/manifests"
)

// reservationPluginAfter is the line of manifests/scheduler/config.yaml's multiPoint list after
// which the playground enables the Reservation plugin.
const reservationPluginAfter = "      - name: LoadAware\n        weight: 2\n"

// SchedulerConfig is the configuration the playground runs accord-scheduler (and the descheduler's
// simulation) with: manifests/scheduler/config.yaml with the Reservation plugin enabled, so that the
// playground policy's ReservationFirst and PodMigration have their reservations placed.
func SchedulerConfig() ([]byte, error) {
	if !bytes.Contains(manifests.SchedulerConfig, []byte(reservationPluginAfter)) {
		return nil, errors.New("manifests/scheduler/config.yaml no longer enables LoadAware with weight 2 in multiPoint: the playground cannot add the Reservation plugin after it")
	}
	return bytes.Replace(manifests.SchedulerConfig, []byte(reservationPluginAfter), []byte(reservationPluginAfter+"      - name: Reservation\n"), 1), nil
}

// migrationHowTo is the playground's how-to for reservations and migrations: two pods moved at once,
// reservation-first, while a burst of pods arrives (TestPlayground takes the same steps through the API).
const migrationHowTo = `Move two web pods at once, reservation-first, while a burst of pods competes for the room (two
PodMigrations: the descheduler reserves node-4 for one pod and node-6 for the other, and evicts each
pod once accord-scheduler has placed its reservation in its own scheduling cycle, so the burst cannot
take that room; each reservation is consumed by one replacement, placed on that reservation's node;
a ReplicaSet's new pods are interchangeable, a StatefulSet pod's replacement takes its own pod's):
  A=$(bin/kubectl get pods -n demo -l app=web --field-selector spec.nodeName!=node-4 -o jsonpath='{.items[0].metadata.name}')
  B=$(bin/kubectl get pods -n demo -l app=web --field-selector spec.nodeName!=node-6,metadata.name!=$A -o jsonpath='{.items[0].metadata.name}')
  bin/kubectl create -f - <<EOF
  apiVersion: scheduling.accord.dev/v1alpha1
  kind: PodMigration
  metadata: {generateName: move-, namespace: demo}
  spec: {podName: $A, targetNode: node-4}
  ---
  apiVersion: scheduling.accord.dev/v1alpha1
  kind: PodMigration
  metadata: {generateName: move-, namespace: demo}
  spec: {podName: $B, targetNode: node-6}
  EOF
  bin/kubectl -n demo scale deployment under-requested --replicas=8
  bin/kubectl get podmigrations,reservations -n demo -w
The console's Pod migrations table shows each one: To (its reservation's node), the reservation, and
the replacement with the node it runs on.
`
