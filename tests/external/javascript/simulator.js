// A simulator in JavaScript, from marlhub's external.proto alone (@grpc/grpc-js and
// @grpc/proto-loader): node simulator.js PROTO ADDRESS EPISODES. It plays EPISODES episodes of
// a two-agent game in which the agents decide at different times, logs a reward after each
// decision, and prints {"logged": total reward logged, "actions": actions received,
// "carried": rewards sent inside the next request} as JSON. Its even episodes send each
// LogReturns on its own, as old clients do; its odd ones carry them in the next GetAction or
// EndEpisode request (`logged`), where the server says it takes them (`takes_logged`).
const grpc = require("@grpc/grpc-js");
const loader = require("@grpc/proto-loader");
const [proto, address, episodes] = process.argv.slice(2);
const definition = loader.loadSync(proto, {keepCase: true, longs: Number, defaults: true, oneofs: true});
const ExternalEnv = grpc.loadPackageDefinition(definition).marlhub.external.v1.ExternalEnv;
const client = new ExternalEnv(address, grpc.credentials.createInsecure());
const call = (name, request) => new Promise((resolve, reject) =>
  client[name](request, (error, response) => (error ? reject(error) : resolve(response))));
const box = (values) => ({tensor: {shape: [values.length], doubles: {values}}});
const discrete = (n) => ({discrete: {n, start: 0}});
const boxSpace = {box: {low: {shape: [2], doubles: {values: [-100, -100]}},
                        high: {shape: [2], doubles: {values: [100, 100]}}, dtype: "float32"}};

async function main() {
  const agents = ["red", "blue"].map((agent) => ({agent, observation: boxSpace, action: discrete(3)}));
  const stream = client.Connect({token: "js-token", agents, name: "javascript"});
  const connected = await new Promise((resolve, reject) => {
    stream.on("data", resolve);
    stream.on("error", reject);
  });
  const session = connected.session;
  let logged = 0, actions = 0, carried = 0;
  for (let e = 0; e < Number(episodes); e++) {
    const carry = connected.takes_logged && e % 2 === 1;
    const {episode_id} = await call("StartEpisode", {session, training_enabled: true});
    const position = [0, 0];
    let kept = [];  // the LogReturns requests for the next request to carry
    for (let t = 0; t < 4; t++) {
      const deciding = t % 2 === 0 ? ["red", "blue"] : [t % 4 === 1 ? "red" : "blue"];
      const observations = deciding.map((agent) => ({agent, value: box(position)}));
      const answer = await call("GetAction", {session, episode_id, observations, logged: kept});
      kept = [];
      for (const {agent, value} of answer.actions) {
        position[agent === "red" ? 0 : 1] += value.tensor.int64s.values[0] - 1;
        actions += 1;
      }
      const rewards = deciding.map((agent) => ({agent, reward: 0.25 + t}));
      logged += rewards.reduce((sum, r) => sum + r.reward, 0);
      const returns = {session, episode_id, rewards, infos: [], done_agents: []};
      if (carry) {
        kept.push({log_returns: returns});
        carried += 1;
      } else {
        await call("LogReturns", returns);
      }
    }
    await call("EndEpisode", {session, episode_id, logged: kept,
                              observations: ["red", "blue"].map((agent) => ({agent, value: box(position)}))});
  }
  await call("Disconnect", {session});
  stream.cancel();
  console.log(JSON.stringify({logged, actions, carried}));
  client.close();
}
main().catch((error) => { console.error(error); process.exit(1); });
