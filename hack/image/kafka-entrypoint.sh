#!/bin/bash
# The Kafka image's entrypoint: one KRaft node of a StatefulSet. The pod's ConfigMap holds what every
# node of the StatefulSet shares (/etc/kafka/server.properties); what differs per pod is derived here
# from its ordinal (the hostname's last dash-separated field), so a scaled-up pod configures itself:
#   node.id      = KAFKA_NODE_ID_OFFSET + ordinal
#   broker.rack  = the ordinal-th of the comma-separated KAFKA_RACKS, round robin (brokers only)
#   advertised   = PLAINTEXT on the pod's stable name <hostname>.KAFKA_SERVICE.<namespace>.svc, and
#                  HOST on the pod's IP, for clients outside the cluster that cannot resolve it.
# The log directory is formatted at the first start (its meta.properties marks it formatted).
set -euo pipefail
ordinal="${HOSTNAME##*-}"
node_id=$((KAFKA_NODE_ID_OFFSET + ordinal))
config=/tmp/server.properties
{
  cat /etc/kafka/server.properties
  echo "node.id=$node_id"
  echo "log.dirs=$KAFKA_DATA_DIR"
  if [ -n "${KAFKA_RACKS:-}" ]; then
    IFS=, read -ra racks <<<"$KAFKA_RACKS"
    echo "broker.rack=${racks[ordinal % ${#racks[@]}]}"
    echo "advertised.listeners=PLAINTEXT://$HOSTNAME.$KAFKA_SERVICE.$POD_NAMESPACE.svc.cluster.local:9092,HOST://$POD_IP:9094"
  fi
} >"$config"
java=("$JAVA_HOME/bin/java" $KAFKA_JVM_OPTS -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.xml -cp '/opt/kafka/libs/*')
if [ ! -f "$KAFKA_DATA_DIR/meta.properties" ]; then
  "${java[@]}" kafka.tools.StorageTool format --cluster-id "$KAFKA_CLUSTER_ID" --config "$config"
fi
exec "${java[@]}" kafka.Kafka "$config"
