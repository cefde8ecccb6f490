#!/bin/sh
# One-shot: create Pressroom's namespace and register the job's search attributes on it
# (run by the temporal-setup service of deploy/docker-compose.yml in temporalio/admin-tools).
# The search-attribute command is workflows/visibility.py's create_command for the
# namespace; tests/deploy/test_deploy_files.py fails when the two differ.
set -eu
NS="${PRESSROOM_NAMESPACE:-pressroom}"
export TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-temporal:7233}"

attempt=0
until temporal operator cluster health; do
  attempt=$((attempt + 1))
  [ "$attempt" -lt 30 ] || { echo "Temporal never became healthy"; exit 1; }
  sleep 2
done

temporal operator namespace describe --namespace "$NS" >/dev/null 2>&1 \
  || temporal operator namespace create --namespace "$NS" --retention 30d

if ! temporal operator search-attribute create --namespace "$NS" --name PressroomStage --type Keyword --name PressroomStatus --type Keyword --name PressroomTenant --type Keyword --name PressroomProject --type Keyword --name PressroomReviewers --type KeywordList --name PressroomTurn --type Int --name PressroomTokens --type Int --name PressroomReason --type Keyword; then
  # already registered (a re-run): fine if the last one the release added is there
  temporal operator search-attribute list --namespace "$NS" | grep -q PressroomReason
fi
echo "namespace $NS ready"
