//! What `sidekicks check` (and the log at start) warns about in where things are: an agent
//! whose workspace holds the state folder or the config can read every access token and
//! password in it whenever it runs without the sandbox, and its work may end up in them.

use std::path::Path;

use super::Config;

impl Config {
    /// Everything `sidekicks check` and the start-up log warn about: the access lists and
    /// the layout.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = self.access.warnings();
        warnings.extend(self.layout_warnings());
        warnings.extend(self.settings_warnings());
        warnings.extend(self.hide_warnings());
        warnings.extend(self.store_warnings());
        warnings
    }

    /// A store URL that holds a password: the config file is read by whoever sets the
    /// gateway up, and a pgpass file keeps the password apart.
    pub fn store_warnings(&self) -> Vec<String> {
        let inline = (self.store.as_deref())
            .and_then(|url| url::Url::parse(url).ok())
            .is_some_and(|url| {
                url.password().is_some() || url.query_pairs().any(|(k, _)| k.contains("password"))
            });
        if inline {
            vec![
                "store: the URL holds a password; keep it in a pgpass file instead \
                 (PGPASSFILE in the service's environment, mode 0600)"
                    .to_owned(),
            ]
        } else {
            Vec::new()
        }
    }

    /// Paths to hide that do not exist: a sandbox can only cover what is there when it is
    /// made, so one that appears later is not hidden from agents already running.
    pub fn hide_warnings(&self) -> Vec<String> {
        (self.sandbox.hide.iter().enumerate())
            .filter(|(_, p)| std::fs::symlink_metadata(p).is_err())
            .map(|(i, p)| {
                format!(
                    "sandbox.hide[{i}]: {} does not exist, so agents that start before it \
                     does are not kept from it; make it (an empty file or folder) first",
                    p.display()
                )
            })
            .collect()
    }

    /// Keys of `[agents.settings]` that no longer do anything.
    pub fn settings_warnings(&self) -> Vec<String> {
        (self.agents.iter().enumerate())
            .filter(|(_, a)| a.settings.admin_only_modes.is_some())
            .map(|(i, _)| {
                format!(
                    "agents[{i}].settings.admin_only_modes is ignored: every mode that is not \
                     known to ask is for admins only now; list the modes that ask in \
                     `asking_modes`"
                )
            })
            .collect()
    }

    /// Warnings about workspaces that hold the gateway's own files, each naming its key.
    pub fn layout_warnings(&self) -> Vec<String> {
        let canonical = |p: &Path| std::fs::canonicalize(p).ok();
        let mut warnings = Vec::new();
        let theirs = [
            ("state_dir", canonical(&self.state_dir)),
            (
                "the config file",
                self.source.as_deref().and_then(canonical),
            ),
        ];
        for (i, agent) in self.agents.iter().enumerate() {
            let Some(root) = canonical(&agent.workspace_root()) else {
                continue;
            };
            for (what, path) in &theirs {
                if path.as_ref().is_some_and(|p| p.starts_with(&root)) {
                    warnings.push(format!(
                        "agents[{i}].workspace: {} holds {what}; without the sandbox the agent \
                         can read it, so move one out of the other",
                        root.display()
                    ));
                }
            }
        }
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_that_holds_the_state_or_the_config_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        let text = |ws: &str| {
            format!(
                "state_dir = \"state\"\n[matrix]\nhomeserver = \"http://127.0.0.1:9\"\n[access]\n\
                 allowed_users = [\"@a:x\"]\n[[agents]]\nid = \"demo\"\ndisplay_name = \"D\"\n\
                 command = \"true\"\nworkspace = \"{ws}\"\n[agents.matrix]\nuser_id = \"@d:x\"\n\
                 password = \"pw\"\n"
            )
        };
        std::fs::create_dir_all(dir.join("state")).unwrap();
        std::fs::write(dir.join("c.toml"), "").unwrap();
        let apart = Config::from_toml(&text("ws"), &dir.join("c.toml")).unwrap();
        assert!(
            apart.layout_warnings().is_empty(),
            "{:?}",
            apart.layout_warnings()
        );
        let around = Config::from_toml(&text("."), &dir.join("c.toml")).unwrap();
        let warnings = around.layout_warnings();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].starts_with("agents[0].workspace:")
                && warnings[0].contains("holds state_dir")
        );
        assert!(warnings[1].contains("holds the config file"));
    }
}
