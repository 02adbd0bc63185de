/**
 * The offline corpus behind `web_search`'s default backend (BM25, src/envs/tools/web-search.ts):
 * every chemical element, seventy countries and short articles on the topics of this project
 * (RL for language models, tools, the web). Built from the tables below, so the documents are
 * deterministic and their facts easy to check. It stands in for the web in tests and offline
 * runs; a real search API is a `web_search.backend: http` away (docs/JUDGES.md).
 */

export interface CorpusDocument {
  id: string;
  title: string;
  url: string;
  text: string;
}

const ELEMENTS =
  "H Hydrogen,He Helium,Li Lithium,Be Beryllium,B Boron,C Carbon,N Nitrogen,O Oxygen,F Fluorine,Ne Neon," +
  "Na Sodium,Mg Magnesium,Al Aluminium,Si Silicon,P Phosphorus,S Sulfur,Cl Chlorine,Ar Argon,K Potassium,Ca Calcium," +
  "Sc Scandium,Ti Titanium,V Vanadium,Cr Chromium,Mn Manganese,Fe Iron,Co Cobalt,Ni Nickel,Cu Copper,Zn Zinc," +
  "Ga Gallium,Ge Germanium,As Arsenic,Se Selenium,Br Bromine,Kr Krypton,Rb Rubidium,Sr Strontium,Y Yttrium,Zr Zirconium," +
  "Nb Niobium,Mo Molybdenum,Tc Technetium,Ru Ruthenium,Rh Rhodium,Pd Palladium,Ag Silver,Cd Cadmium,In Indium,Sn Tin," +
  "Sb Antimony,Te Tellurium,I Iodine,Xe Xenon,Cs Caesium,Ba Barium,La Lanthanum,Ce Cerium,Pr Praseodymium,Nd Neodymium," +
  "Pm Promethium,Sm Samarium,Eu Europium,Gd Gadolinium,Tb Terbium,Dy Dysprosium,Ho Holmium,Er Erbium,Tm Thulium,Yb Ytterbium," +
  "Lu Lutetium,Hf Hafnium,Ta Tantalum,W Tungsten,Re Rhenium,Os Osmium,Ir Iridium,Pt Platinum,Au Gold,Hg Mercury," +
  "Tl Thallium,Pb Lead,Bi Bismuth,Po Polonium,At Astatine,Rn Radon,Fr Francium,Ra Radium,Ac Actinium,Th Thorium," +
  "Pa Protactinium,U Uranium,Np Neptunium,Pu Plutonium,Am Americium,Cm Curium,Bk Berkelium,Cf Californium,Es Einsteinium,Fm Fermium," +
  "Md Mendelevium,No Nobelium,Lr Lawrencium,Rf Rutherfordium,Db Dubnium,Sg Seaborgium,Bh Bohrium,Hs Hassium,Mt Meitnerium,Ds Darmstadtium," +
  "Rg Roentgenium,Cn Copernicium,Nh Nihonium,Fl Flerovium,Mc Moscovium,Lv Livermorium,Ts Tennessine,Og Oganesson";

const CATEGORY: [string, number[]][] = [
  ["an alkali metal", [3, 11, 19, 37, 55, 87]],
  ["an alkaline earth metal", [4, 12, 20, 38, 56, 88]],
  ["a noble gas", [2, 10, 18, 36, 54, 86, 118]],
  ["a halogen", [9, 17, 35, 53, 85, 117]],
  ["a metalloid", [5, 14, 32, 33, 51, 52]],
  ["a nonmetal", [1, 6, 7, 8, 15, 16, 34]],
  ["a post-transition metal", [13, 31, 49, 50, 81, 82, 83, 84, 113, 114, 115, 116]],
];
const GASES = new Set([1, 2, 7, 8, 9, 10, 17, 18, 36, 54, 86]);
const LIQUIDS = new Set([35, 80]);

function categoryOf(z: number): string {
  if (z >= 57 && z <= 71) return "a lanthanide";
  if (z >= 89 && z <= 103) return "an actinide";
  return CATEGORY.find(([, zs]) => zs.includes(z))?.[0] ?? "a transition metal";
}

function periodOf(z: number): number {
  const ends = [2, 10, 18, 36, 54, 86, 118];
  return ends.findIndex((end) => z <= end) + 1;
}

function elementDocs(): CorpusDocument[] {
  return ELEMENTS.split(",").map((entry, i) => {
    const [symbol, name] = entry.split(" ") as [string, string];
    const z = i + 1;
    const state =
      z === 43 || z === 61 || z >= 95
        ? "It is synthetic: it does not occur in nature in useful amounts and is made in reactors or accelerators."
        : `At room temperature it is a ${GASES.has(z) ? "gas" : LIQUIDS.has(z) ? "liquid" : "solid"}.`;
    return {
      id: `element-${z}`,
      title: `${name} (chemical element)`,
      url: `https://corpus.atropos-edge.local/elements/${name.toLowerCase()}`,
      text: `${name} is a chemical element with the symbol ${symbol} and atomic number ${z}: its nucleus holds ${z} protons. ${name} is ${categoryOf(z)} in period ${periodOf(z)} of the periodic table. ${state}`,
    };
  });
}

/** name | capital | continent | currency */
const COUNTRIES = `Argentina|Buenos Aires|South America|Argentine peso
Australia|Canberra|Oceania|Australian dollar
Austria|Vienna|Europe|euro
Bangladesh|Dhaka|Asia|taka
Belgium|Brussels|Europe|euro
Bolivia|Sucre|South America|boliviano
Brazil|Brasília|South America|Brazilian real
Bulgaria|Sofia|Europe|lev
Canada|Ottawa|North America|Canadian dollar
Chile|Santiago|South America|Chilean peso
China|Beijing|Asia|renminbi (yuan)
Colombia|Bogotá|South America|Colombian peso
Croatia|Zagreb|Europe|euro
Cuba|Havana|North America|Cuban peso
Czech Republic|Prague|Europe|Czech koruna
Denmark|Copenhagen|Europe|Danish krone
Egypt|Cairo|Africa|Egyptian pound
Estonia|Tallinn|Europe|euro
Ethiopia|Addis Ababa|Africa|birr
Finland|Helsinki|Europe|euro
France|Paris|Europe|euro
Germany|Berlin|Europe|euro
Ghana|Accra|Africa|Ghanaian cedi
Greece|Athens|Europe|euro
Hungary|Budapest|Europe|forint
Iceland|Reykjavík|Europe|Icelandic króna
India|New Delhi|Asia|Indian rupee
Indonesia|Jakarta|Asia|Indonesian rupiah
Iran|Tehran|Asia|Iranian rial
Ireland|Dublin|Europe|euro
Israel|Jerusalem|Asia|new shekel
Italy|Rome|Europe|euro
Japan|Tokyo|Asia|yen
Kenya|Nairobi|Africa|Kenyan shilling
Latvia|Riga|Europe|euro
Lithuania|Vilnius|Europe|euro
Malaysia|Kuala Lumpur|Asia|ringgit
Mexico|Mexico City|North America|Mexican peso
Morocco|Rabat|Africa|Moroccan dirham
Nepal|Kathmandu|Asia|Nepalese rupee
Netherlands|Amsterdam|Europe|euro
New Zealand|Wellington|Oceania|New Zealand dollar
Nigeria|Abuja|Africa|naira
Norway|Oslo|Europe|Norwegian krone
Pakistan|Islamabad|Asia|Pakistani rupee
Peru|Lima|South America|sol
Philippines|Manila|Asia|Philippine peso
Poland|Warsaw|Europe|złoty
Portugal|Lisbon|Europe|euro
Romania|Bucharest|Europe|Romanian leu
Saudi Arabia|Riyadh|Asia|Saudi riyal
Senegal|Dakar|Africa|West African CFA franc
Serbia|Belgrade|Europe|Serbian dinar
Singapore|Singapore|Asia|Singapore dollar
Slovakia|Bratislava|Europe|euro
Slovenia|Ljubljana|Europe|euro
South Africa|Pretoria|Africa|rand
South Korea|Seoul|Asia|South Korean won
Spain|Madrid|Europe|euro
Sweden|Stockholm|Europe|Swedish krona
Switzerland|Bern|Europe|Swiss franc
Tanzania|Dodoma|Africa|Tanzanian shilling
Thailand|Bangkok|Asia|baht
Turkey|Ankara|Asia|Turkish lira
Uganda|Kampala|Africa|Ugandan shilling
Ukraine|Kyiv|Europe|hryvnia
United Kingdom|London|Europe|pound sterling
United States|Washington, D.C.|North America|United States dollar
Uruguay|Montevideo|South America|Uruguayan peso
Vietnam|Hanoi|Asia|đồng`;

function countryDocs(): CorpusDocument[] {
  return COUNTRIES.split("\n").map((line) => {
    const [name, capital, continent, currency] = line.split("|") as [
      string,
      string,
      string,
      string,
    ];
    const slug = name.toLowerCase().replace(/[^a-z]+/g, "-");
    return {
      id: `country-${slug}`,
      title: `${name} (country)`,
      url: `https://corpus.atropos-edge.local/countries/${slug}`,
      text: `${name} is a country in ${continent}. Its capital city is ${capital}, and its currency is the ${currency}.`,
    };
  });
}

/** title | text */
const ARTICLES = `Reinforcement learning|Reinforcement learning trains an agent by trial and error: the agent acts in an environment, receives rewards, and updates its policy to collect more reward over time.
Policy gradient|Policy gradient methods adjust a parametrised policy in the direction that makes high-reward actions more likely; REINFORCE is the simplest estimator.
Proximal Policy Optimization|Proximal Policy Optimization (PPO) limits each policy update with a clipped probability ratio, so a step never moves the policy too far from the one that collected the data.
Group Relative Policy Optimization|Group Relative Policy Optimization (GRPO) samples a group of answers per prompt and uses each answer's reward minus the group mean, divided by the group standard deviation, as its advantage; it needs no value network.
Reward model|A reward model is a network trained on human preferences to score responses; reinforcement learning from human feedback (RLHF) optimises a policy against it.
LLM as a judge|An LLM judge scores or ranks responses against a rubric. Judges have biases, such as preferring longer or better-formatted answers, so panels of several judges and calibration against human labels are used.
Rollout|A rollout is one episode of a policy in an environment: the prompts, the model's actions and tool calls, the observations and the final reward.
Tokenizer|A tokenizer splits text into tokens, the integer ids a language model reads and writes; byte-pair encoding (BPE) merges frequent byte pairs into larger tokens.
Transformer|The transformer architecture processes sequences with self-attention layers; decoder-only transformers generate text one token at a time.
Quantization|Quantization stores model weights with fewer bits, for example 4-bit formats such as q4_k_m in GGUF files used by llama.cpp, trading a little accuracy for much less memory.
LoRA|Low-rank adaptation (LoRA) fine-tunes a large model by training small low-rank matrices added to its weight matrices, leaving the original weights frozen.
Curriculum learning|Curriculum learning orders training tasks from easy to hard, raising the difficulty once the learner succeeds often enough at the current level.
BM25|BM25 (Okapi BM25) ranks documents for a query by term frequency, inverse document frequency and document length; k1 and b are its two parameters.
Inverse document frequency|Inverse document frequency (IDF) gives rare terms more weight than common ones: a term found in few documents is more informative about a match.
Web search engine|A web search engine crawls pages, builds an inverted index from terms to documents, and ranks the documents matching a query.
Sandbox|A sandbox runs untrusted code with limits on time, memory, files and network, so a hostile program can harm nothing outside it.
Python|Python is a high-level programming language created by Guido van Rossum and first released in 1991; it is widely used for machine learning.
JavaScript|JavaScript is the programming language of web browsers, standardised as ECMAScript; Node.js runs it on servers.
TypeScript|TypeScript is a typed superset of JavaScript developed by Microsoft; its compiler checks types and emits JavaScript.
Cloudflare Workers|Cloudflare Workers run JavaScript and WebAssembly in V8 isolates at the network edge; Durable Objects give them consistent state.
JSON|JSON (JavaScript Object Notation) is a text format for data made of objects, arrays, strings, numbers, booleans and null.
HTTP|HTTP is the request-response protocol of the web: a client sends a method such as GET or POST to a URL and the server answers with a status code and a body.
Speed of light|The speed of light in vacuum is exactly 299,792,458 metres per second.
Mount Everest|Mount Everest, on the border of Nepal and China, is the highest mountain above sea level at about 8,849 metres.
Pacific Ocean|The Pacific Ocean is the largest and deepest of Earth's oceans, covering about a third of the planet's surface.
Photosynthesis|Photosynthesis is how plants, algae and some bacteria turn light, water and carbon dioxide into glucose and oxygen.
DNA|DNA (deoxyribonucleic acid) carries genetic information as a double helix of four bases: adenine, thymine, guanine and cytosine.
Moon|The Moon is Earth's only natural satellite; its average distance from Earth is about 384,400 kilometres.
Solar System|The Solar System has eight planets: Mercury, Venus, Earth, Mars, Jupiter, Saturn, Uranus and Neptune; Jupiter is the largest.
Water|Water (H2O) boils at 100 degrees Celsius and freezes at 0 degrees Celsius at standard atmospheric pressure.`;

function articleDocs(): CorpusDocument[] {
  return ARTICLES.split("\n").map((line) => {
    const [title, text] = line.split("|") as [string, string];
    const slug = title.toLowerCase().replace(/[^a-z0-9]+/g, "-");
    return {
      id: `article-${slug}`,
      title,
      url: `https://corpus.atropos-edge.local/articles/${slug}`,
      text,
    };
  });
}

let corpus: CorpusDocument[] | null = null;

/** The bundled documents (built once). */
export function searchCorpus(): CorpusDocument[] {
  corpus ??= [...elementDocs(), ...countryDocs(), ...articleDocs()];
  return corpus;
}
