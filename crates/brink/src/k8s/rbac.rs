//! The least a `brink k8s run` of one name needs in its namespace, as a Role, with a
//! ServiceAccount bound to it for a run started from inside the cluster (a CI job's pod).
//! The Job is the only object it names, reads, changes (to start it once the objects it
//! owns exist) and deletes: the Secret, the Service and the NetworkPolicy are only created,
//! with the Job as their owner, so the garbage collector removes them with it. Kubernetes
//! cannot limit `create` or `list` to names: those rules name no object.

use super::inputs::{meta, Inputs};
use crate::cli::K8sObjectArgs;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};

/// The Role, a ServiceAccount and the RoleBinding giving it the Role.
pub fn objects(a: &K8sObjectArgs, i: &Inputs) -> (Role, ServiceAccount, RoleBinding) {
    let name = format!("{}-runner", i.name);
    let account = ServiceAccount {
        metadata: meta(a, &i.name, &name),
        automount_service_account_token: Some(false),
        ..ServiceAccount::default()
    };
    let binding = RoleBinding {
        metadata: meta(a, &i.name, &name),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: name.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: name.clone(),
            namespace: a.namespace.clone(),
            ..Subject::default()
        }]),
    };
    (role(a, i, &name), account, binding)
}

fn role(a: &K8sObjectArgs, i: &Inputs, name: &str) -> Role {
    let rule = |group: &str, resources: &[&str], verbs: &[&str], names: Option<&str>| PolicyRule {
        api_groups: Some(vec![group.to_string()]),
        resources: Some(resources.iter().map(|s| s.to_string()).collect()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        resource_names: names.map(|n| vec![n.to_string()]),
        ..PolicyRule::default()
    };
    let mut rules = vec![
        rule("batch", &["jobs"], &["create"], None),
        // Its state read, started once its objects exist, deleted (with its pods and
        // objects) at the end.
        rule(
            "batch",
            &["jobs"],
            &["get", "patch", "delete"],
            Some(&i.name),
        ),
        rule("", &["secrets", "services"], &["create"], None),
        // Pods carry a random suffix: found by the Job's label; the coordinator's deleted on
        // Ctrl-C so it stops its workers and reports.
        rule("", &["pods"], &["get", "list", "delete"], None),
        rule("", &["pods/log"], &["get"], None),
    ];
    if !a.no_network_policy {
        rules.push(rule(
            "networking.k8s.io",
            &["networkpolicies"],
            &["create"],
            None,
        ));
    }
    Role {
        metadata: meta(a, &i.name, name),
        rules: Some(rules),
    }
}
