use pretty_assertions::assert_eq;

use super::*;

#[test]
fn a_word_the_shell_reads_specially_is_quoted() {
    let command = StdioCommand {
        program: "/opt/tool gate/toolgate".to_owned(),
        args: vec![
            "serve".to_owned(),
            "--config".to_owned(),
            "/home/you/it's here/toolgate.toml".to_owned(),
            "--store".to_owned(),
            "postgres://toolgate@db/toolgate?host=/run/postgresql".to_owned(),
        ],
    };
    assert_eq!(
        command.shell(),
        r"'/opt/tool gate/toolgate' serve --config '/home/you/it'\''s here/toolgate.toml' --store 'postgres://toolgate@db/toolgate?host=/run/postgresql'"
    );
    assert_eq!(
        command.desktop_entry().to_string(),
        r#"{"mcpServers":{"toolgate":{"command":"/opt/tool gate/toolgate","args":["serve","--config","/home/you/it's here/toolgate.toml","--store","postgres://toolgate@db/toolgate?host=/run/postgresql"]}}}"#
    );
}
