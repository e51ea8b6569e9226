//! strata-scripting: Redis's Lua 5.1 environment, independent of the server. The server
//! supplies a [`Host`] that runs `redis.call`; this crate owns the sandbox, the conversions
//! between Lua values and RESP replies, and the libraries Redis bundles.
//!
//! Behaviour follows Redis 7.0.15 (script_lua.c, eval.c, function_lua.c): globals and library
//! tables are read-only, errors carry Redis's exact texts and " script: NAME, on SOURCE:LINE."
//! suffix. Error strings returned by this crate (`Err(String)`) start with their code
//! ("ERR ...") and are ready for an error reply.

mod call;
mod engine;
mod ffi;
pub mod libs;
mod resp;
mod shebang;

/// Scripts and functions are looked up by name on every call: foldhash, not SipHash
/// (which was 1% of an EVALSHA's instructions).
type HashMap<K, V> = foldhash::HashMap<K, V>;

pub use shebang::ScriptFlags;

/// What a script can do to the database. The server implements it.
pub trait Host {
    /// Runs one Redis command (argv[0] is the name) for redis.call/redis.pcall and writes its
    /// complete reply into `reply` (empty on entry; reused from call to call), encoded as RESP
    /// bytes in protocol `resp` (2 or 3: what the script set with redis.setresp; default 2).
    /// An error reply is written as RESP error bytes ("-ERR ...\r\n"). The host also gives
    /// Redis's script-specific refusals ("-ERR Unknown Redis command called from script",
    /// "-ERR Wrong number of args calling Redis command from script", ...).
    fn call(&mut self, argv: Vec<bytes::Bytes>, resp: u8, reply: &mut Vec<u8>);
    /// redis.log(level, msg): level is 0..3 (debug, verbose, notice, warning).
    fn log(&mut self, level: u8, msg: &str);
    /// Called every 100k Lua instructions: true kills the script (SCRIPT KILL / FUNCTION KILL).
    fn tick(&mut self) -> bool;
    /// redis.acl_check_cmd: may the user running the script run this command (argv[0] is
    /// the name) with these arguments? None when no such command exists.
    fn acl_check_cmd(&mut self, argv: &[bytes::Bytes]) -> Option<bool>;
    /// The reply of the script (or of the attempt to run it) holds this error: its text,
    /// without the '-'. `counted` says the error comes from a command the script called
    /// and was counted in the error statistics when that command failed (Redis's
    /// `ignore_error_stats_update`); any other is for the host to count. Called once per
    /// error, nested ones included, after the script ends.
    fn reply_error(&mut self, _text: &[u8], _counted: bool) {}
}

/// One function of a library, as FUNCTION LIST shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionInfo {
    pub name: String,
    pub description: Option<String>,
    pub flags: ScriptFlags,
}

/// What FUNCTION LOAD learnt from a library's code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryInfo {
    pub name: String,
    pub functions: Vec<FunctionInfo>,
}

/// SHA1 of `data` in lowercase hex, as Redis names scripts.
pub fn sha1hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

/// A worker thread's scripting state: one Lua state for EVAL scripts and one for functions,
/// as Redis keeps them apart.
pub struct Lua {
    eval: engine::Engine,
    func: engine::Engine,
    /// sha -> compiled EVAL body and its shebang flags.
    scripts: HashMap<String, (mlua::Function, ScriptFlags)>,
    /// library name -> its function names.
    libraries: HashMap<String, Vec<String>>,
    /// function name -> callback (in `func`) and flags.
    /// By lower-cased name: FCALL finds a function in any case.
    functions: HashMap<String, (mlua::Function, ScriptFlags)>,
}

impl Default for Lua {
    fn default() -> Self {
        Self::new()
    }
}

impl Lua {
    /// A sandboxed state. Panics only if Lua cannot allocate its initial state.
    pub fn new() -> Lua {
        Lua {
            eval: engine::Engine::new(false).expect("creating the Lua state for EVAL"),
            func: engine::Engine::new(true).expect("creating the Lua state for functions"),
            scripts: HashMap::default(),
            libraries: HashMap::default(),
            functions: HashMap::default(),
        }
    }

    /// EVAL/EVALSHA body: compiles (cached by sha1 of the body in this state) and runs it with
    /// KEYS and ARGV. Returns the complete RESP reply for a client speaking `client_resp`.
    pub fn eval(
        &mut self,
        body: &[u8],
        keys: &[&[u8]],
        args: &[&[u8]],
        client_resp: u8,
        host: &mut dyn Host,
    ) -> Vec<u8> {
        self.eval_sha(&sha1hex(body), Some(body), keys, args, client_resp, host)
    }

    /// `eval` for a body whose sha1 the caller knows already (EVALSHA). Without a body the
    /// script must be compiled in this state already (see `script_flags_of`); otherwise
    /// the reply is NOSCRIPT.
    pub fn eval_sha(
        &mut self,
        sha: &str,
        body: Option<&[u8]>,
        keys: &[&[u8]],
        args: &[&[u8]],
        client_resp: u8,
        host: &mut dyn Host,
    ) -> Vec<u8> {
        let compiled = match body {
            Some(body) => self.compile(body, sha),
            None => self
                .scripts
                .get(sha)
                .map(|(f, _)| f.clone())
                .ok_or_else(|| b"-NOSCRIPT No matching script. Please use EVAL.\r\n".to_vec()),
        };
        let f = match compiled {
            Ok(f) => f,
            Err(reply) => return refused(reply, host),
        };
        let input = engine::Input::Globals(keys, args);
        self.eval.run(&f, input, sha, client_resp, host)
    }

    /// SCRIPT LOAD: compiles an EVAL body into this state's cache. Returns its sha1, or the
    /// complete error reply (a bad shebang, a compile error) as EVAL would give it.
    pub fn load_script(&mut self, body: &[u8]) -> Result<String, Vec<u8>> {
        let sha = sha1hex(body);
        self.compile(body, &sha).map(|_| sha)
    }

    /// The flags of a script this state has compiled, by sha1: EVALSHA of a cached script
    /// needs neither its body nor the shared registry.
    pub fn script_flags_of(&self, sha: &str) -> Option<ScriptFlags> {
        self.scripts.get(sha).map(|(_, flags)| *flags)
    }

    /// The flags of a function of a loaded library.
    pub fn function_flags(&self, name: &str) -> Option<ScriptFlags> {
        self.functions
            .get(&name.to_ascii_lowercase())
            .map(|(_, flags)| *flags)
    }

    /// The compiled function for an EVAL body, compiling and caching it on first use.
    fn compile(&mut self, body: &[u8], sha: &str) -> Result<mlua::Function, Vec<u8>> {
        if let Some((f, _)) = self.scripts.get(sha) {
            return Ok(f.clone());
        }
        let mut out = Vec::new();
        let (flags, off) = match shebang::eval_flags(body) {
            Ok(found) => found,
            Err(e) => {
                resp::push_error(&mut out, e.as_bytes());
                return Err(out);
            }
        };
        match self.eval.compile(&body[off..], c"@user_script") {
            Ok(Ok(f)) => {
                self.scripts.insert(sha.to_string(), (f.clone(), flags));
                Ok(f)
            }
            Ok(Err(msg)) => {
                let mut m = b"ERR Error compiling script (new function): ".to_vec();
                m.extend_from_slice(&msg);
                resp::push_error(&mut out, &m);
                Err(out)
            }
            Err(e) => Err(internal_error(e)),
        }
    }

    /// Parses the shebang flags of an EVAL script (`#!lua flags=no-writes,allow-oom`).
    /// No shebang gives `eval_compat_mode`.
    pub fn script_flags(body: &[u8]) -> Result<ScriptFlags, String> {
        shebang::eval_flags(body).map(|(f, _)| f)
    }

    /// FUNCTION LOAD: runs the library code in the restricted load environment and registers
    /// its functions in this state (for [`Lua::fcall`]). A library of the same name must be
    /// unloaded first (FUNCTION LOAD REPLACE: `unload_library` then `load_library`).
    pub fn load_library(&mut self, code: &[u8]) -> Result<LibraryInfo, String> {
        let (name, off) = shebang::library_meta(code)?;
        if self.libraries.contains_key(&name) {
            return Err(format!("ERR Library '{name}' already exists"));
        }
        let f = match self.func.compile(&code[off..], c"@user_function") {
            Ok(Ok(f)) => f,
            Ok(Err(msg)) => {
                return Err(format!(
                    "ERR Error compiling function: {}",
                    String::from_utf8_lossy(&msg)
                ))
            }
            Err(e) => return Err(format!("ERR {e}")),
        };
        let funcs = self.func.run_library(&f)?;
        if funcs.is_empty() {
            return Err("ERR No functions registered".into());
        }
        // Function names are one namespace across libraries, in any case (Redis's
        // functions dictionary compares them case-insensitively). Within one library two
        // names may differ in case only: FCALL then finds the first, as in Redis.
        for (fname, ..) in &funcs {
            if self.functions.contains_key(&fname.to_ascii_lowercase()) {
                return Err(format!("ERR Function {fname} already exists"));
            }
        }
        let mut info = LibraryInfo {
            name: name.clone(),
            functions: Vec::new(),
        };
        let mut names = Vec::new();
        for (fname, callback, description, flags) in funcs {
            let folded = fname.to_ascii_lowercase();
            if !self.functions.contains_key(&folded) {
                self.functions.insert(folded.clone(), (callback, flags));
                names.push(folded);
            }
            info.functions.push(FunctionInfo {
                name: fname,
                description,
                flags,
            });
        }
        self.libraries.insert(name, names);
        Ok(info)
    }

    /// Drops a library and its functions from this state (no-op if unknown).
    pub fn unload_library(&mut self, name: &str) {
        if let Some(names) = self.libraries.remove(name) {
            for n in names {
                self.functions.remove(&n);
            }
        }
    }

    /// FCALL/FCALL_RO: calls a registered function of a loaded library.
    pub fn fcall(
        &mut self,
        function: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
        client_resp: u8,
        host: &mut dyn Host,
    ) -> Vec<u8> {
        let Some((f, _)) = self.functions.get(&function.to_ascii_lowercase()) else {
            return refused(b"-ERR Function not found\r\n".to_vec(), host);
        };
        let input = engine::Input::Args(keys, args);
        self.func.run(f, input, function, client_resp, host)
    }

    /// SCRIPT FLUSH: like Redis, a fresh Lua state for EVAL scripts.
    pub fn flush_scripts(&mut self) {
        self.scripts.clear();
        if let Ok(mut e) = engine::Engine::new(false) {
            e.copy_rand_from(&self.eval);
            self.eval = e;
        }
    }
}

/// An error reply given instead of running a script, noted for the host's statistics.
fn refused(reply: Vec<u8>, host: &mut dyn Host) -> Vec<u8> {
    if let Some(text) = reply.get(1..reply.len().saturating_sub(2)) {
        host.reply_error(text, false);
    }
    reply
}

/// An mlua failure outside the script (allocation): still an error reply, never a panic.
fn internal_error(e: mlua::Error) -> Vec<u8> {
    let mut out = Vec::new();
    resp::push_error(&mut out, format!("ERR {e}").as_bytes());
    out
}
