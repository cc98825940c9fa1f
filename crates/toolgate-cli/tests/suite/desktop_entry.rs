//! The command `toolgate serve`'s banner gives clients that start their
//! servers themselves, run as a desktop app runs it: from `/`, from no
//! shell. It serves what the gateway that printed it serves, and no tool
//! reads outside the files root; and a gateway started in `/` or in the
//! home directory serves no `files` group unless its root was given.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::gateways::{StdioGateway, exchange, listening_url, write_mathx};

/// `toolgate serve` over HTTP on a free port in `cwd`, with `home` as its
/// home and data directories: the child and its whole banner.
fn serve(home: &Path, cwd: &Path, extra: &[&str]) -> (Child, String) {
    use std::io::{BufRead, BufReader};
    let mut child = super::support::toolgate(home)
        .current_dir(cwd)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut banner = String::new();
    while !banner.ends_with("Press Ctrl-C to stop.\n") {
        if stderr.read_line(&mut banner).unwrap() == 0 {
            panic!("toolgate serve ended before its banner ended:\n{banner}");
        }
    }
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
    });
    (child, banner)
}

/// The banner's groups, one line each, as listed under `groups:`.
fn groups(banner: &str) -> Vec<&str> {
    banner
        .lines()
        .skip_while(|line| *line != "  groups:")
        .skip(1)
        .take_while(|line| line.starts_with("    "))
        .collect()
}

/// The Claude Desktop entry the banner prints: the program and its
/// arguments.
fn desktop_entry(banner: &str) -> (String, Vec<String>) {
    let line = banner
        .lines()
        .find_map(|line| line.strip_prefix("  Claude Desktop:  "))
        .unwrap_or_else(|| panic!("no Claude Desktop line in:\n{banner}"));
    let entry: Value = serde_json::from_str(line).unwrap();
    let server = &entry["mcpServers"]["toolgate"];
    let args = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap().to_owned())
        .collect();
    (server["command"].as_str().unwrap().to_owned(), args)
}

fn call(gateway: &mut StdioGateway, id: u64, tool: &str, arguments: Value) -> Value {
    let answer = gateway.request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    );
    answer["result"].clone()
}

#[test]
fn a_client_started_in_the_root_with_the_banner_entry_serves_what_the_gateway_serves() {
    let base = tempfile::tempdir().unwrap();
    let home = base.path().join("home");
    let project = base.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(base.path().join("secret.txt"), "not for the model\n").unwrap();
    std::fs::write(project.join("notes.txt"), "hello from notes\n").unwrap();
    // ./tools, found where the gateway starts.
    write_mathx(&project);
    // An upstream that starts only in the configuration's directory.
    let time = super::support::peers().venv_bin.join("mcp-server-time");
    std::fs::write(
        project.join("toolgate.toml"),
        format!(
            "[[upstream]]\nname = \"clock\"\ncommand = \"sh\"\n\
             args = [\"-c\", \"test -f toolgate.toml && exec {}\"]\neager = true\n",
            time.display()
        ),
    )
    .unwrap();
    let (mut gateway, banner) = serve(&home, &project, &[]);
    let (program, args) = desktop_entry(&banner);
    let _ = gateway.kill();
    let _ = gateway.wait();
    assert_eq!(
        PathBuf::from(&program).canonicalize().unwrap(),
        PathBuf::from(env!("CARGO_BIN_EXE_toolgate"))
            .canonicalize()
            .unwrap()
    );
    let project = project.canonicalize().unwrap();
    let files_root = args
        .iter()
        .position(|arg| arg == "--files-root")
        .map(|at| PathBuf::from(&args[at + 1]));
    assert_eq!(files_root, Some(project.clone()), "{args:?}");
    assert!(
        args.windows(2).any(|pair| pair
            == [
                "--config",
                &project.join("toolgate.toml").display().to_string()
            ]),
        "{args:?}"
    );

    // Started as a desktop app starts it: in /, its stderr kept.
    let stderr = base.path().join("stdio.log");
    let mut command = super::support::toolgate(&home);
    command
        .current_dir("/")
        .args(&args)
        .stderr(std::fs::File::create(&stderr).unwrap());
    let mut client = StdioGateway::spawn(command);
    client.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "desktop", "version": "0"}}),
    );
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    call(
        &mut client,
        2,
        "load_tool_group",
        json!({"group_name": "files"}),
    );
    let listed = call(&mut client, 3, "files_list", json!({"path": "."}));
    let names: Vec<&str> = listed["structuredContent"]["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|entry| entry["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["notes.txt", "toolgate.toml", "tools"], "{listed}");
    for (id, path) in [
        (4, "../secret.txt".to_owned()),
        (5, base.path().join("secret.txt").display().to_string()),
        (6, "/etc/passwd".to_owned()),
    ] {
        let read = call(&mut client, id, "files_read", json!({"path": path}));
        assert_eq!(read["isError"], true, "{path}: {read}");
        assert!(!read.to_string().contains("not for the model"), "{read}");
    }
    assert!(client.close().success());
    let printed = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(groups(&printed), groups(&banner), "{printed}\n{banner}");
    assert!(
        groups(&banner).contains(&"    - clock: 2 tools (upstream, started)"),
        "{banner}"
    );
}

#[test]
fn a_gateway_started_in_the_root_or_the_home_directory_serves_no_files_unless_told() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path().canonicalize().unwrap();
    for (cwd, what) in [
        (PathBuf::from("/"), "/ (the filesystem root)".to_owned()),
        (
            home.clone(),
            format!("{} (your home directory)", home.display()),
        ),
    ] {
        let (mut gateway, banner) = serve(&home, &cwd, &["--memory-store"]);
        let why =
            format!("the working directory is {what}; give --files-root DIR to serve a directory");
        assert!(
            groups(&banner).contains(&format!("    - files: not served: {why}").as_str()),
            "{banner}"
        );
        let (_, args) = desktop_entry(&banner);
        assert!(!args.contains(&"--files-root".to_owned()), "{args:?}");
        let page = exchange(&listening_url(&banner), "GET / HTTP/1.1\r\n\r\n");
        assert!(
            page.contains(&format!(
                "<p class=\"note\" data-withheld=\"files\">Not served: files: {why}</p>"
            )),
            "{page}"
        );
        // The banner and the status page say alike how the tools are sent.
        let sent = banner
            .lines()
            .find_map(|line| line.strip_prefix("  tools sent: "))
            .unwrap_or_else(|| panic!("{banner}"));
        assert!(sent.ends_with(", sent whole ([tools] defer)"), "{sent}");
        assert!(
            page.contains(&format!(
                "<p class=\"note\" data-delivery>Tools sent: {sent}.</p>"
            )),
            "{page}"
        );
        let _ = gateway.kill();
        let _ = gateway.wait();
    }
    // Given, it is served.
    let (mut gateway, banner) = serve(&home, &home, &["--memory-store", "--files-root", "."]);
    assert!(
        groups(&banner).contains(&"    - files: 3 tools"),
        "{banner}"
    );
    let _ = gateway.kill();
    let _ = gateway.wait();
}
